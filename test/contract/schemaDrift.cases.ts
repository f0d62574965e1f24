import { describe, expect, it } from 'vitest';
import type { DriftChange, JsonObject } from '../../src/simulator/index.js';
import type { Harness } from '../mirror/harness.js';
import { sync } from './mirrorExactness.cases.js';
import { liveRows, scalar, sqliteForm } from './mirrorStores.js';
import {
  driftSetup,
  type ExpectedChange,
  expectMirrorServes,
  expectNothingReported,
  expectRecordedOnce,
  expectRowAdmits,
  expectShown,
  type ListTable,
  type OpenDriftMirror,
  SIZES,
  withSync,
} from './schemaDriftChecks.js';
import { schemaDriftPolicyCases } from './schemaDriftPolicies.js';

/**
 * Upstream schema drift (issue 28) against the simulator, the same cases on SQLite
 * (schemaDrift.sqlite.test.ts) and PostgreSQL (schemaDrift.pg.test.ts): for each kind of change,
 * between runs and mid-run (the drift starts after the run's first page), the change is recorded
 * once (one row, one feed row, one delivery, one log line, however many records and runs show it)
 * and the mirror equals upstream for every record the policy admits. Then: a vanished field only
 * after a complete scan, the policies, and quarantined records coming back after the policy changes.
 */

const SIM = { projects: 'projects', issuances: 'issuances', unit_operations: 'units' } as const;

interface DriftKind {
  name: string;
  table: ListTable;
  /** Already upstream at the first sync (learned as the baseline). */
  baseline?: DriftChange[];
  changes: DriftChange[];
  want: Omit<ExpectedChange, 'table'>;
  /** Served records the default policy quarantines. */
  quarantines?: (r: JsonObject) => boolean;
  /** The change has no example record (a vanished field). */
  noExample?: boolean;
  /** Mid-run, reported by the next run (a field the run's first page still had is not gone). */
  midRunReportedLater?: boolean;
  /** Its count is of the records that show it, growing with every run that reads them. */
  countGrows?: boolean;
}

const KINDS: DriftKind[] = [
  {
    name: 'a field added',
    table: 'projects',
    changes: [{ kind: 'add-field', field: 'projectRating', value: 'AA' }],
    want: { field: 'projectRating', kind: 'field-added', before: null, after: 'string', mapped: false },
    countGrows: true,
  },
  {
    name: 'a field removed',
    table: 'projects',
    changes: [{ kind: 'drop-field', field: 'projectTags' }],
    want: { field: 'projectTags', kind: 'field-removed', before: 'string', after: 'absent', mapped: true },
    noExample: true,
    midRunReportedLater: true,
  },
  {
    name: 'a type changed on a mapped field',
    table: 'projects',
    changes: [{ kind: 'change-type', field: 'totalEstimatedUnits', to: 'string', share: 0.4 }],
    want: {
      field: 'totalEstimatedUnits',
      kind: 'type-changed',
      before: 'number',
      after: 'string',
      mapped: true,
    },
    quarantines: (r) => typeof r.totalEstimatedUnits === 'string',
    countGrows: true,
  },
  {
    name: 'a type changed on an unmapped field',
    table: 'projects',
    baseline: [{ kind: 'add-field', field: 'projectScore', value: 7 }],
    changes: [{ kind: 'change-type', field: 'projectScore', to: 'string' }],
    want: { field: 'projectScore', kind: 'type-changed', before: 'number', after: 'string', mapped: false },
    countGrows: true,
  },
  {
    name: 'a new enum value',
    table: 'projects',
    changes: [{ kind: 'new-value', field: 'projectStatus', value: 'Suspended', share: 0.4 }],
    want: { field: 'projectStatus', kind: 'new-value', before: null, after: 'Suspended', mapped: true },
  },
  {
    name: 'the key format changed',
    table: 'issuances',
    changes: [{ kind: 'key-format', format: 'prefixed' }],
    want: { field: 'issuanceId', kind: 'key-format-changed', before: 'integer', after: 'text', mapped: true },
  },
];

/** Keys of served records that show the change (the example key is one of them). */
function showing(h: Harness, kind: DriftKind): Set<string> {
  const served = h.sim.registry.servedSnapshot(SIM[kind.table]);
  const stored = h.sim.registry.snapshot(SIM[kind.table]);
  const storedValues = [...stored.values()];
  const out = new Set<string>();
  let i = 0;
  for (const [key, record] of served) {
    const old = storedValues[i++]!;
    const f = kind.want.field;
    if (kind.want.kind === 'key-format-changed' || JSON.stringify(record[f]) !== JSON.stringify(old[f]))
      out.add(key);
  }
  return out;
}

/** Registers the cases on `kind`; `open` gives each case a fresh store. */
export function schemaDriftCases(kind: 'sqlite' | 'postgres', open: OpenDriftMirror): void {
  const setup = driftSetup(open);

  const run = sync;

  describe(`schema drift on ${kind}`, () => {
    for (const drift of KINDS)
      for (const midRun of [false, true])
        it(`${drift.name}, ${midRun ? 'mid-run' : 'between runs'}: recorded once, the mirror equals upstream where admitted`, async () => {
          const { h, m, log } = await setup();
          const target = SIM[drift.table];
          if (drift.baseline) h.sim.registry.drift({ resource: target, changes: drift.baseline });
          expect(await run(h.ctx, m, target)).toMatchObject({ status: 'succeeded' });
          // The first sync of an empty mirror is the baseline: nothing to compare with.
          await expectNothingReported(m, log);
          const before = await liveRows(m, drift.table);

          h.sim.registry.drift({ resource: target, changes: drift.changes, afterRequests: midRun ? 1 : 0 });
          expect(await run(h.ctx, m, target)).toMatchObject({ status: 'succeeded' });
          if (midRun && drift.midRunReportedLater) {
            await expectNothingReported(m, log);
            expect(await run(h.ctx, m, target)).toMatchObject({ status: 'succeeded' });
          }
          const want = { table: drift.table, ...drift.want };
          const examples = drift.noExample ? null : showing(h, drift);
          const id = await expectRecordedOnce(m, log, want, examples);
          await expectShown(m, h.ctx.config, want, id, h.ctx.clock.now());
          const count = await scalar(m, 'SELECT count AS n FROM schema_changes');
          // A removal counts every record of the complete scan that found it.
          if (drift.want.kind === 'field-removed') expect(count).toBe(SIZES.projects);

          // Twice more: the same one row (its count grows), still one feed row, delivery, line.
          for (const _ of [1, 2]) expect(await run(h.ctx, m, target)).toMatchObject({ status: 'succeeded' });
          expect(await expectRecordedOnce(m, log, want, examples)).toBe(id);
          if (drift.countGrows)
            expect(await scalar(m, 'SELECT count AS n FROM schema_changes')).toBeGreaterThan(count);

          const served = h.sim.registry.servedSnapshot(target);
          const quarantined = new Set([...served].filter(([, r]) => drift.quarantines?.(r)).map(([k]) => k));
          await expectMirrorServes(m, h, drift.table, { quarantined, before });
          const open = await m.query(
            'SELECT record_id, reason FROM quarantine WHERE resolved_at IS NULL ORDER BY record_id',
          );
          expect(open.map((q) => q.record_id)).toEqual([...quarantined].sort());
          for (const q of open) expect(String(q.reason)).toMatch(/^schema: /);
          if (drift.quarantines) expect(quarantined.size).toBeGreaterThan(0);
          // Re-running did not quarantine a record twice.
          expect(await scalar(m, 'SELECT count(*) AS n FROM quarantine')).toBe(quarantined.size);
        });
  });

  describe(`schema drift on ${kind}: the baseline`, () => {
    it('the first sync of an empty mirror reports nothing, even of records that disagree with each other', async () => {
      const { h, m, log } = await setup();
      h.sim.registry.drift({
        resource: 'projects',
        changes: [
          { kind: 'change-type', field: 'totalEstimatedUnits', to: 'string', share: 0.4 },
          { kind: 'new-value', field: 'projectStatus', value: 'Suspended', share: 0.4 },
          { kind: 'add-field', field: 'projectRating', value: 'AA', share: 0.5 },
        ],
      });
      h.sim.registry.drift({ resource: 'issuances', changes: [{ kind: 'key-format', format: 'uuid' }] });
      for (const target of ['projects', 'issuances', 'units', 'custody'] as const)
        expect(await run(h.ctx, m, target)).toMatchObject({
          status: 'succeeded',
          counts: { quarantined: 0 },
        });
      await expectNothingReported(m, log);
      expect(await scalar(m, 'SELECT count(*) AS n FROM quarantine')).toBe(0);
      // What it saw is the shape learned: both types taken, the value known, the key format uuid.
      const fields = await m.query(
        "SELECT field, admitted, enum_values, key_formats FROM schema_fields WHERE resource IN ('projects', 'issuances') AND field IN ('totalEstimatedUnits', 'projectStatus', 'issuanceId')",
      );
      const byField = new Map(fields.map((f) => [String(f.field), f]));
      expect(JSON.parse(String(byField.get('totalEstimatedUnits')?.admitted))).toEqual(
        expect.arrayContaining(['number', 'string']),
      );
      expect(JSON.parse(String(byField.get('projectStatus')?.enum_values))).toContain('Suspended');
      expect(JSON.parse(String(byField.get('issuanceId')?.key_formats))).toEqual(['uuid']);
      await expectMirrorServes(m, h, 'projects');
      await expectMirrorServes(m, h, 'issuances');
    });
  });

  describe(`schema drift on ${kind}: a vanished field`, () => {
    it('is reported only after a complete scan: not after max_pages, a stop or a failed page; then once', async () => {
      const { h, m, log } = await setup({ 'sync.page_attempts': 2 });
      expect(await run(h.ctx, m, 'projects')).toMatchObject({ status: 'succeeded' });
      h.sim.registry.drift({ resource: 'projects', changes: [{ kind: 'drop-field', field: 'projectTags' }] });

      // Stopped by sync.max_pages: the next run resumes; nothing is reported yet.
      const capped = await run(withSync(h.ctx, { max_pages: 2 }), m, 'projects');
      expect(capped.counts.pages).toBe(2);
      await expectNothingReported(m, log);
      // The resumed scan stopped by a signal after its first batch.
      const stop = new AbortController();
      const stopped = await run(h.ctx, m, 'projects', {
        signal: stop.signal,
        onProgress: () => stop.abort(),
      });
      expect(stopped.status).toBe('interrupted');
      await expectNothingReported(m, log);
      // The run's second page fails every attempt: injected as its request leaves (the scan asks
      // for a page before the one before it commits).
      const client = h.ctx.operator();
      const list = client.list.bind(client);
      let sent = 0;
      client.list = (operation, path, query, request) => {
        if (path === '/integration/v1/projects' && ++sent === 2)
          h.sim.faults.next(2, '503', { pathPrefix: '/integration/v1/projects' });
        return list(operation, path, query, request);
      };
      const failed = await run(h.ctx, m, 'projects');
      client.list = list;
      expect(failed.status).toBe('failed');
      await expectNothingReported(m, log);

      // The next complete scan reports it, once.
      let complete = await run(h.ctx, m, 'projects');
      while (complete.status !== 'succeeded') complete = await run(h.ctx, m, 'projects');
      const want = {
        table: 'projects' as const,
        field: 'projectTags',
        kind: 'field-removed',
        before: 'string',
        after: 'absent',
        mapped: true,
      };
      const id = await expectRecordedOnce(m, log, want, null);
      expect(await run(h.ctx, m, 'projects')).toMatchObject({ status: 'succeeded' });
      expect(await expectRecordedOnce(m, log, want, null)).toBe(id);
      await expectMirrorServes(m, h, 'projects');
    });
  });

  describe(`schema drift on ${kind}: a scan over several runs`, () => {
    it('a removal found by a resumed scan is recorded once, counted over the run that completed it', async () => {
      const { h, m } = await setup();
      expect(await run(h.ctx, m, 'projects')).toMatchObject({ status: 'succeeded' });
      h.sim.registry.drift({ resource: 'projects', changes: [{ kind: 'drop-field', field: 'projectTags' }] });
      // Two pages, then the rest: one scan over two runs. The first part's fields were seen in the
      // scan (their last sight is kept with the data), so only the dropped one is gone.
      expect((await run(withSync(h.ctx, { max_pages: 2 }), m, 'projects')).counts.pages).toBe(2);
      expect(await m.query('SELECT id FROM schema_changes')).toEqual([]);
      const last = await run(h.ctx, m, 'projects');
      expect(last).toMatchObject({ status: 'succeeded' });
      const changes = await m.query('SELECT field, kind, count FROM schema_changes');
      expect(changes.map((c) => [c.field, c.kind])).toEqual([['projectTags', 'field-removed']]);
      // The counts are the completing run's (docs/mirror.md, "Schema drift"): what it read.
      const read = last.counts.fetched;
      expect(read).toBeLessThan(SIZES.projects);
      expect(Number(changes[0]!.count)).toBe(read);
      const field = await m.query("SELECT records, present FROM schema_fields WHERE field = 'projectName'");
      expect(field.map((f) => [Number(f.records), Number(f.present)])).toEqual([[read, read]]);
    });
  });

  describe(`schema drift on ${kind}: the custody reads`, () => {
    it('a field added to the records read by id: recorded once for custody_projects, the rows as served', async () => {
      const { h, m, log } = await setup();
      expect(await run(h.ctx, m, 'custody')).toMatchObject({ status: 'succeeded' });
      await expectNothingReported(m, log);
      h.sim.registry.drift({
        resource: 'projects',
        changes: [{ kind: 'add-field', field: 'projectRating', value: 'AA' }],
      });
      for (const _ of [1, 2, 3])
        expect(await run(h.ctx, m, 'custody')).toMatchObject({ status: 'succeeded' });
      const ids = h.sim.registry.custodyIds('projects').map(String);
      const want = {
        table: 'custody_projects' as const,
        field: 'projectRating',
        kind: 'field-added',
        before: null,
        after: 'string',
        mapped: false,
      };
      await expectRecordedOnce(m, log, want, new Set(ids));
      const rows = await m.query('SELECT * FROM custody_projects WHERE _custody_ended_at IS NULL');
      expect(rows).toHaveLength(ids.length);
      for (const row of rows) {
        const id = String(row.projectID);
        const served = h.sim.registry.served('projects', h.sim.registry.get('projects', id)!);
        expect(served.projectRating).toBe('AA');
        expectRowAdmits(
          'custody_projects',
          m.kind === 'postgres' ? sqliteForm('custody_projects', row) : row,
          served,
        );
      }
    });

    it('the key format changed in the reads by id: recorded once, and one custody row per id still held', async () => {
      const { h, m, log } = await setup();
      expect(await run(h.ctx, m, 'custody')).toMatchObject({ status: 'succeeded' });
      h.sim.registry.drift({ resource: 'issuances', changes: [{ kind: 'key-format', format: 'prefixed' }] });
      for (const _ of [1, 2]) expect(await run(h.ctx, m, 'custody')).toMatchObject({ status: 'succeeded' });
      const held = h.sim.registry.custodyIds('issuances').map(String);
      await expectRecordedOnce(
        m,
        log,
        {
          table: 'custody_issuances',
          field: 'issuanceId',
          kind: 'key-format-changed',
          before: 'integer',
          after: 'text',
          mapped: true,
        },
        new Set(held.map((id) => `I-${id}`)),
      );
      // The operator answers the read of 100000 with I-100000: the same holding, not a second one.
      expect(
        await scalar(m, 'SELECT count(*) AS n FROM custody_issuances WHERE _custody_ended_at IS NULL'),
        'custody rows in custody',
      ).toBe(held.length);
    });
  });

  schemaDriftPolicyCases(kind, open);
}
