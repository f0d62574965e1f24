import { describe, expect, it } from 'vitest';
import type { DriftChange } from '../../src/simulator/index.js';
import type { Harness } from '../mirror/harness.js';
import { sync } from './mirrorExactness.cases.js';
import { liveRows, scalar } from './mirrorStores.js';
import {
  driftSetup,
  expectMirrorServes,
  expectRecordedOnce,
  expectRowAdmits,
  type OpenDriftMirror,
  SIZES,
  withSchema,
} from './schemaDriftChecks.js';

/**
 * The `[sync.schema]` policies on either store (registered by schemaDrift.cases.ts): a type change
 * on a mapped field quarantined (the default), stored with the column null, or failing the run; a
 * new enum value quarantined; quarantined records coming back once the policy changes, in the
 * lists and in the units log (where the re-applied unit keeps its place).
 */

const TYPE_CHANGE: DriftChange = {
  kind: 'change-type',
  field: 'totalEstimatedUnits',
  to: 'string',
  share: 0.4,
};
const TYPE_CHANGED = {
  table: 'projects' as const,
  field: 'totalEstimatedUnits',
  kind: 'type-changed',
  before: 'number',
  after: 'string',
  mapped: true,
};
const drifted = (r: Record<string, unknown>) => typeof r.totalEstimatedUnits === 'string';

export function schemaDriftPolicyCases(kind: 'sqlite' | 'postgres', open: OpenDriftMirror): void {
  const setup = driftSetup(open);
  const run = sync;
  const driftedKeys = (h: Harness) =>
    new Set([...h.sim.registry.servedSnapshot('projects')].filter(([, r]) => drifted(r)).map(([k]) => k));

  describe(`schema drift policies on ${kind}`, () => {
    it('a record re-read from quarantine at the next run does not make its fields vanish', async () => {
      const { h, m } = await setup();
      await run(h.ctx, m, 'projects');
      h.sim.registry.drift({ resource: 'projects', changes: [TYPE_CHANGE] });
      await run(h.ctx, m, 'projects');
      expect(await run(h.ctx, m, 'projects')).toMatchObject({ status: 'succeeded' });
      // Every field is still sent by every record: the only change is the type.
      expect(await m.query("SELECT field FROM schema_changes WHERE kind = 'field-removed'")).toEqual([]);
      expect(await m.query('SELECT field FROM schema_fields WHERE removed_at IS NOT NULL')).toEqual([]);
    });

    it('on_type_change = "store": the column is null, the value in _raw, nothing quarantined', async () => {
      const { h, m, log } = await setup({ 'sync.schema': { on_type_change: 'store' } });
      await run(h.ctx, m, 'projects');
      h.sim.registry.drift({
        resource: 'projects',
        changes: [{ kind: 'change-type', field: 'totalEstimatedUnits', to: 'string' }],
      });
      expect(await run(h.ctx, m, 'projects')).toMatchObject({
        status: 'succeeded',
        counts: { quarantined: 0 },
      });
      await expectRecordedOnce(m, log, TYPE_CHANGED, driftedKeys(h));
      await expectMirrorServes(m, h, 'projects', {
        nullColumns: (r) => (drifted(r) ? ['totalEstimatedUnits'] : []),
      });
      expect(await scalar(m, 'SELECT count(*) AS n FROM quarantine')).toBe(0);
      expect(await scalar(m, 'SELECT count(*) AS n FROM projects WHERE "totalEstimatedUnits" IS NULL')).toBe(
        SIZES.projects,
      );
    });

    it('on_type_change = "fail": the run fails naming the field; the change is still recorded, once', async () => {
      const { h, m, log } = await setup({ 'sync.schema': { on_type_change: 'fail' } });
      await run(h.ctx, m, 'projects');
      h.sim.registry.drift({ resource: 'projects', changes: [TYPE_CHANGE] });
      for (const _ of [1, 2]) {
        const outcome = await run(h.ctx, m, 'projects');
        expect(outcome.status).toBe('failed');
        expect(outcome.error).toContain('totalEstimatedUnits');
      }
      const runs = await m.query(
        "SELECT status, error FROM sync_runs WHERE resource = 'projects' ORDER BY id",
      );
      expect(runs.map((r) => r.status)).toEqual(['succeeded', 'failed', 'failed']);
      for (const r of runs.slice(1)) expect(String(r.error)).toContain('totalEstimatedUnits');
      await expectRecordedOnce(m, log, TYPE_CHANGED, driftedKeys(h));
    });

    it('on_new_value = "quarantine": the records with the new value are quarantined once, the rest admitted', async () => {
      const { h, m, log } = await setup({ 'sync.schema': { on_new_value: 'quarantine' } });
      await run(h.ctx, m, 'projects');
      const before = await liveRows(m, 'projects');
      h.sim.registry.drift({
        resource: 'projects',
        changes: [{ kind: 'new-value', field: 'projectStatus', value: 'Suspended', share: 0.4 }],
      });
      for (const _ of [1, 2, 3])
        expect(await run(h.ctx, m, 'projects')).toMatchObject({ status: 'succeeded' });
      const served = h.sim.registry.servedSnapshot('projects');
      const suspended = new Set(
        [...served].filter(([, r]) => r.projectStatus === 'Suspended').map(([k]) => k),
      );
      expect(suspended.size).toBeGreaterThan(0);
      await expectRecordedOnce(
        m,
        log,
        {
          table: 'projects',
          field: 'projectStatus',
          kind: 'new-value',
          before: null,
          after: 'Suspended',
          mapped: true,
        },
        suspended,
      );
      await expectMirrorServes(m, h, 'projects', { quarantined: suspended, before });
      const rows = await m.query('SELECT record_id, reason FROM quarantine ORDER BY record_id');
      expect(rows.map((r) => r.record_id)).toEqual([...suspended].sort());
      for (const r of rows) expect(String(r.reason)).toMatch(/^schema: projectStatus = "Suspended"/);
    });

    it('quarantined records come back when on_type_change becomes "store": in the mirror, their rows resolved', async () => {
      const { h, m, log } = await setup();
      await run(h.ctx, m, 'projects');
      const before = await liveRows(m, 'projects');
      h.sim.registry.drift({ resource: 'projects', changes: [TYPE_CHANGE] });
      expect(await run(h.ctx, m, 'projects')).toMatchObject({ status: 'succeeded' });
      const keys = driftedKeys(h);
      await expectMirrorServes(m, h, 'projects', { quarantined: keys, before });
      expect(await scalar(m, 'SELECT count(*) AS n FROM quarantine WHERE resolved_at IS NULL')).toBe(
        keys.size,
      );

      // A new configuration of the same database: the next run re-applies them.
      const stored = withSchema(h.ctx, { on_type_change: 'store' });
      expect(await run(stored, m, 'projects')).toMatchObject({ status: 'succeeded' });
      await expectMirrorServes(m, h, 'projects', {
        nullColumns: (r) => (drifted(r) ? ['totalEstimatedUnits'] : []),
      });
      const rows = await m.query('SELECT record_id, resolved_at FROM quarantine ORDER BY record_id');
      expect(rows.map((r) => r.record_id)).toEqual([...keys].sort());
      for (const r of rows) expect(r.resolved_at).not.toBeNull();
      expect(await run(stored, m, 'projects')).toMatchObject({
        status: 'succeeded',
        counts: { quarantined: 0 },
      });
      expect(await scalar(m, 'SELECT count(*) AS n FROM quarantine')).toBe(keys.size);
      await expectRecordedOnce(m, log, TYPE_CHANGED, keys);
    });

    it('in the units log: a unit quarantined by an incremental run comes back at its place (_position)', async () => {
      const { h, m } = await setup();
      expect(await run(h.ctx, m, 'units')).toMatchObject({ status: 'succeeded' });
      // From the incremental run's second page: its first, the overlap with the mirror, is as before.
      h.sim.registry.drift({
        resource: 'units',
        changes: [{ kind: 'change-type', field: 'unitsQuantity', to: 'string', share: 0.5 }],
        afterRequests: 1,
      });
      const added = h.sim.registry.appendUnits(10);
      const incremental = await run(h.ctx, m, 'units');
      expect(incremental).toMatchObject({ status: 'succeeded', mode: 'incremental' });
      const served = h.sim.registry.servedSnapshot('units');
      const isNew = (k: string) => k >= added.firstId! && k <= added.lastId!;
      const newDrifted = [...served].filter(([k, r]) => isNew(k) && typeof r.unitsQuantity === 'string');
      expect(newDrifted.length).toBeGreaterThan(0);
      const held = await m.query(
        "SELECT record_id, position FROM quarantine WHERE resource = 'unit_operations' AND resolved_at IS NULL",
      );
      const positions = new Map(held.map((q) => [String(q.record_id), q.position]));
      for (const [k] of newDrifted) {
        expect(positions.get(k), `${k} quarantined with its place`).not.toBeNull();
        expect(positions.has(k)).toBe(true);
      }
      const liveBefore = await liveRows(m, 'unit_operations');
      for (const [k] of newDrifted) expect(liveBefore.has(k)).toBe(false);

      const stored = withSchema(h.ctx, { on_type_change: 'store' });
      expect(await run(stored, m, 'units')).toMatchObject({ status: 'succeeded', mode: 'incremental' });
      // The units the incremental runs read (the new ones) are as served; the log before is not re-read.
      const rows = await liveRows(m, 'unit_operations');
      expect(rows.size).toBe(SIZES.units + 10);
      for (const [k, r] of served)
        if (isNew(k))
          expectRowAdmits(
            'unit_operations',
            rows.get(k),
            r,
            typeof r.unitsQuantity === 'string' ? ['unitsQuantity'] : [],
          );
      for (const [k] of newDrifted)
        expect(Number(rows.get(k)?._position), `${k}._position`).toBe(Number(positions.get(k)));
      // The log's order is the keys' order: the re-applied units sit where they stood.
      const byKey = [...rows.entries()]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([, r]) => Number(r._position));
      expect(byKey).toEqual([...byKey].sort((a, b) => a - b));
      expect(new Set(byKey).size).toBe(byKey.length);
      expect(await scalar(m, 'SELECT count(*) AS n FROM quarantine WHERE resolved_at IS NULL')).toBe(0);
    });

    it('a type change in the units log under quarantine: the next runs stay incremental', async () => {
      const { h, m } = await setup();
      expect(await run(h.ctx, m, 'units')).toMatchObject({ status: 'succeeded' });
      h.sim.registry.drift({
        resource: 'units',
        changes: [{ kind: 'change-type', field: 'unitsQuantity', to: 'string', share: 0.5 }],
        afterRequests: 1,
      });
      const modes: string[] = [];
      for (const _ of [1, 2, 3, 4]) {
        h.sim.registry.appendUnits(5);
        const outcome = await run(h.ctx, m, 'units');
        expect(outcome.status).toBe('succeeded');
        modes.push(outcome.mode);
      }
      // Units already mirrored that changed upstream inside the overlap are a mismatch once (the log
      // was rewritten: one full scan, as for any rewrite); the units it then holds back are not: a
      // held-back unit compares with what was held back, so the runs after stay incremental.
      expect(modes.filter((mode) => mode === 'full').length).toBeLessThanOrEqual(1);
      expect(modes.slice(-2)).toEqual(['incremental', 'incremental']);
    });

    for (const [name, target, change, show] of [
      [
        'a new enum value',
        'projects',
        { kind: 'new-value', field: 'projectStatus', value: 'Suspended', share: 0.4 },
        (r: Record<string, unknown>) => r.projectStatus === 'Suspended',
      ],
      ['a new key format', 'issuances', { kind: 'key-format', format: 'prefixed' }, () => true],
    ] as const)
      it(`${name}: its count is at least the records that showed it, as a type change's is`, async () => {
        const { h, m } = await setup();
        await run(h.ctx, m, target);
        h.sim.registry.drift({ resource: target, changes: [change as DriftChange] });
        await run(h.ctx, m, target);
        const showing = [...h.sim.registry.servedSnapshot(target).values()].filter(show).length;
        expect(showing).toBeGreaterThan(1);
        const rows = await m.query('SELECT kind, count FROM schema_changes');
        expect(rows).toHaveLength(1);
        expect(Number(rows[0]!.count), `${String(rows[0]!.kind)} count`).toBeGreaterThanOrEqual(showing);
      });
  });
}
