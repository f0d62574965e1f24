import { afterEach, describe, expect, it } from 'vitest';
import type { SyncTarget } from '../../src/common/syncRequests.js';
import type { AppContext } from '../../src/context.js';
import { startRun } from '../../src/mirror/backend.js';
import { emptyCounts } from '../../src/mirror/bookkeeping.js';
import { custodyResources } from '../../src/mirror/resources.js';
import { type RunOutcome, type RunSyncOptions, runSync } from '../../src/mirror/syncRun.js';
import { captureLog, type Harness, harness, noSleep } from '../mirror/harness.js';
import {
  expectCustodyEquals,
  expectMirrorEquals,
  feedAfter,
  type MirrorUnderTest,
  queueOutboxRow,
  scalar,
} from './mirrorStores.js';

/**
 * The mirror's exactness on the operator's worst day, the same cases on SQLite
 * (mirrorExactness.sqlite.test.ts) and PostgreSQL (mirrorExactness.pg.test.ts): a silent page cap
 * below `page_size`, a list that ignores paging, removals between runs, an update to one field,
 * quarantined records, a scan resumed after a failure mid-run; custody read from the configuration
 * and the outbox, a read failing, one unreadable, ids leaving custody and one coming back. The end
 * state is asserted (the mirror equals the registry field by field) and so are the tallies and the
 * feed rows, which are the same on both stores because the assertions are.
 */

const PROJECTS = '/integration/v1/projects';

/** The mirror under test on a fresh database of its kind, for the case's simulator and context. */
export type OpenMirror = (h: Harness) => Promise<MirrorUnderTest>;

export function sync(
  ctx: AppContext,
  m: MirrorUnderTest,
  target: SyncTarget,
  options: Partial<RunSyncOptions> = {},
) {
  return runSync(ctx, target, { sleep: noSleep, backend: m.backend, ...options });
}

async function syncAll(ctx: AppContext, m: MirrorUnderTest): Promise<RunOutcome[]> {
  const outcomes = [];
  for (const target of ['projects', 'issuances', 'units'] as const) outcomes.push(await sync(ctx, m, target));
  return outcomes;
}

const tallies = (outcomes: RunOutcome[]) =>
  outcomes.map((o) => [o.status, o.counts.inserted, o.counts.updated, o.counts.unchanged, o.counts.removed]);

const lastSeq = (m: MirrorUnderTest) => scalar(m, 'SELECT coalesce(max(seq), 0) AS n FROM changes');

/** Registers the cases on `kind`; `open` gives each case a fresh store. */
export function mirrorExactnessCases(kind: 'sqlite' | 'postgres', open: OpenMirror): void {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  describe(`the mirror on ${kind}`, () => {
    it('a silent cap below page_size, removals, one changed field and quarantine: equal to upstream, same tallies and feed', async () => {
      h = await harness(
        { projects: 230, issuances: 420, units: 1150, maxPageSize: 100 },
        { 'sync.page_size': 500, 'sync.units_overlap': 10 },
      );
      const m = await open(h);
      const lines = captureLog(h.ctx);
      const first = await syncAll(h.ctx, m);
      expect(tallies(first)).toEqual([
        ['succeeded', 230, 0, 0, 0],
        ['succeeded', 420, 0, 0, 0],
        ['succeeded', 1150, 0, 0, 0],
      ]);
      await expectMirrorEquals(m, h);
      const feed1 = await feedAfter(m, 0);
      expect(feed1).toHaveLength(230 + 420 + 1150);
      expect(new Set(feed1.map((f) => f.split(' ')[2]))).toEqual(new Set(['insert']));
      expect(lines.filter((l) => l.event === 'sync.list.page_capped').map((l) => l.pageSize)).toEqual([
        100, 100, 100,
      ]);

      // The next day: one field of one project, three issuances gone, 30 new units.
      const reg = h.sim.registry;
      const changed = [...reg.snapshot('projects').keys()][150]!;
      reg.change('projects', changed, { projectStatus: 'Registered' });
      const gone = [...reg.snapshot('issuances').keys()].slice(300, 303);
      for (const id of gone) reg.remove('issuances', id);
      const added = reg.appendUnits(30);
      const seq = await lastSeq(m);
      const second = await syncAll(h.ctx, m);
      expect(second.map((o) => o.mode)).toEqual(['full', 'full', 'incremental']);
      expect(tallies(second)).toEqual([
        ['succeeded', 0, 1, 229, 0],
        ['succeeded', 0, 0, 417, 3],
        ['succeeded', 30, 0, 0, 0],
      ]);
      await expectMirrorEquals(m, h);
      const feed2 = await feedAfter(m, seq);
      expect(feed2.slice(0, 4)).toEqual(
        [`projects ${changed} update`, ...gone.map((id) => `issuances ${id} remove`)].slice(0, 4),
      );
      expect(feed2.slice(4)).toHaveLength(30);
      expect(feed2.at(-1)).toBe(`unit_operations ${added.lastId} insert`);
      expect(await scalar(m, 'SELECT count(*) AS n FROM issuances WHERE _removed_at IS NOT NULL')).toBe(3);

      // A record the operator sends unreadable is quarantined, counted, kept out of tombstoning.
      h.sim.faults.next(1, 'invalid-record', {
        pathPrefix: PROJECTS,
        corruptField: 'isProjectCoveredByNDC',
        corruptValue: 'perhaps',
      });
      const third = await sync(h.ctx, m, 'projects');
      expect(third).toMatchObject({
        status: 'succeeded',
        counts: { quarantined: 1, unchanged: 229, removed: 0 },
      });
      expect(await scalar(m, "SELECT count(*) AS n FROM quarantine WHERE resource = 'projects'")).toBe(1);
      await expectMirrorEquals(m, h);
      const runs = await m.query(
        'SELECT status, inserted, updated, removed, unchanged, quarantined FROM sync_runs ORDER BY id',
      );
      expect(
        runs.map((r) =>
          Object.values(r).map((v) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v)),
        ),
      ).toEqual([
        ['succeeded', 230, 0, 0, 0, 0],
        ['succeeded', 420, 0, 0, 0, 0],
        ['succeeded', 1150, 0, 0, 0, 0],
        ['succeeded', 0, 1, 0, 229, 0],
        ['succeeded', 0, 0, 3, 417, 0],
        ['succeeded', 30, 0, 0, 0, 0],
        ['succeeded', 0, 0, 0, 229, 1],
      ]);
    });

    it('a list that ignores paging is read as one body; a record gone from it is removed', async () => {
      h = await harness({ projects: 150, projectsUnpaginated: true }, { 'sync.page_size': 50 });
      const m = await open(h);
      expect(await sync(h.ctx, m, 'projects')).toMatchObject({
        status: 'succeeded',
        counts: { inserted: 150 },
      });
      await expectMirrorEquals(m, h, ['projects']);
      const id = [...h.sim.registry.snapshot('projects').keys()][7]!;
      h.sim.registry.remove('projects', id);
      const seq = await lastSeq(m);
      expect(await sync(h.ctx, m, 'projects')).toMatchObject({
        status: 'succeeded',
        counts: { removed: 1, unchanged: 149 },
      });
      await expectMirrorEquals(m, h, ['projects']);
      expect(await feedAfter(m, seq)).toEqual([`projects ${id} remove`]);
    });

    it('a run that fails mid-scan resumes from its checkpoint: only the rest is fetched, nothing written twice', async () => {
      h = await harness({ projects: 230 }, { 'sync.page_size': 50, 'sync.page_attempts': 2 });
      const m = await open(h);
      // The second page fails every attempt. Injected as its request leaves (the scan asks for a page
      // before the one before it commits, so waiting for the first commit would be too late).
      const client = h.ctx.operator();
      const list = client.list.bind(client);
      let sent = 0;
      client.list = (operation, path, query, request) => {
        if (path === PROJECTS && ++sent === 2) h!.sim.faults.next(2, '503', { pathPrefix: PROJECTS });
        return list(operation, path, query, request);
      };
      const failed = await sync(h.ctx, m, 'projects');
      client.list = list;
      expect(failed.status).toBe('failed');
      expect(failed.counts.inserted).toBe(50);
      const checkpoint = (
        await m.query("SELECT next_offset FROM sync_checkpoints WHERE resource = 'projects'")
      )[0];
      expect(Number(checkpoint?.next_offset)).toBe(50);
      const resumed = await sync(h.ctx, m, 'projects');
      expect(resumed).toMatchObject({ status: 'succeeded', counts: { inserted: 180, fetched: 180 } });
      await expectMirrorEquals(m, h, ['projects']);
      expect(await feedAfter(m, 0)).toHaveLength(230);
      const rows = await m.query(
        "SELECT resumed_from FROM sync_runs WHERE resource = 'projects' ORDER BY id",
      );
      expect(rows.map((r) => (r.resumed_from === null ? null : Number(r.resumed_from)))).toEqual([
        null,
        failed.runId,
      ]);
    });

    it('a max_remove_share refusal keeps the mirror and fails the run, with the same words', async () => {
      h = await harness({ projects: 40 }, { 'sync.page_size': 50, 'sync.max_remove_share': 0.1 });
      const m = await open(h);
      await sync(h.ctx, m, 'projects');
      for (const id of [...h.sim.registry.snapshot('projects').keys()].slice(0, 10))
        h.sim.registry.remove('projects', id);
      const outcome = await sync(h.ctx, m, 'projects');
      expect(outcome).toMatchObject({ status: 'failed', counts: { removed: 0 } });
      expect(outcome.error).toBe(
        'refused to mark 10 of 40 projects removed (more than sync.max_remove_share=0.1); the mirror keeps them',
      );
      expect(await scalar(m, 'SELECT count(*) AS n FROM projects WHERE _removed_at IS NULL')).toBe(40);
    });
    it('custody on a worst day: ids from the configuration and the outbox, a failing and an unreadable read, 404s, an id back in custody', async () => {
      h = await harness();
      const m = await open(h);
      const reg = h.sim.registry;
      const lines = captureLog(h.ctx);
      const ids = (r: 'projects' | 'issuances' | 'units') => [...reg.snapshot(r).keys()];
      const [units, issuances, projects] = [ids('units'), ids('issuances'), ids('projects')];
      // The configuration names the simulator's custody (3 projects, 5 issuances, 10 units); the
      // outbox adds two units and an issuance (accepted, approved; a queued one does not count) and
      // names a configured unit again (its source stays `config`).
      const [u11, u12, u13, i6] = [units[20]!, units[21]!, units[22]!, issuances[30]!];
      reg.addToCustody('units', [u11, u12]);
      reg.addToCustody('issuances', [i6]);
      await queueOutboxRow(m, 't1', 'Tokenization', { unitId: Number(u11), issuanceId: i6 }, 'accepted');
      await queueOutboxRow(m, 't2', 'tokenization', { unitId: u12 }, 'approved');
      await queueOutboxRow(m, 't3', 'Tokenization', { unitId: u13 }, 'queued');
      await queueOutboxRow(m, 't4', 'Tokenization', { unitId: units[0] }, 'accepted');
      const unreadable = issuances[2]!;
      h.sim.faults.next(2, '503', { pathPrefix: `/integration/v1/projects/${projects[1]}` });
      h.sim.faults.next(1, 'invalid-record', { pathPrefix: `/integration/v1/issuances/${unreadable}` });

      const first = await sync(h.ctx, m, 'custody');
      expect(first).toMatchObject({
        status: 'succeeded',
        counts: { fetched: 21, inserted: 20, quarantined: 1, unchanged: 0, removed: 0, pages: 21 },
      });
      expect(h.sim.faults.pending()).toEqual([]);
      await expectCustodyEquals(m, h, [unreadable]);
      const sources = await m.query(
        "SELECT id, source FROM custody_ids WHERE source <> 'config' OR id = $1 ORDER BY kind, id",
        [units[0]],
      );
      expect(sources).toEqual([
        { id: i6, source: 'outbox' },
        { id: units[0], source: 'config' },
        { id: u11, source: 'outbox' },
        { id: u12, source: 'outbox' },
      ]);
      // Fed in the order read: each kind's ids by id.
      const inCustody = (r: 'projects' | 'issuances' | 'units') => reg.custodyIds(r).map(String).sort();
      const table = { projects: 'custody_projects', issuances: 'custody_issuances', units: 'custody_units' };
      const inserts = (['projects', 'issuances', 'units'] as const).flatMap((r) =>
        inCustody(r)
          .filter((id) => id !== unreadable)
          .map((id) => `${table[r]} ${id} insert`),
      );
      expect(await feedAfter(m, 0)).toEqual(inserts);

      // The next day: a project changed, a unit left custody, the outbox's issuance is gone upstream,
      // the unreadable issuance reads well.
      reg.change('projects', projects[0]!, { projectStatus: 'Registered' });
      const u2 = units[1]!;
      reg.removeFromCustody('units', [u2]);
      reg.remove('issuances', i6);
      const seq = await lastSeq(m);
      const second = await sync(h.ctx, m, 'custody');
      expect(second).toMatchObject({
        status: 'succeeded',
        counts: {
          fetched: 19,
          inserted: 1,
          updated: 1,
          unchanged: 17,
          removed: 2,
          quarantined: 0,
          pages: 21,
        },
      });
      await expectCustodyEquals(m, h);
      expect(await feedAfter(m, seq)).toEqual([
        `custody_projects ${projects[0]} update`,
        `custody_issuances ${unreadable} insert`,
        `custody_issuances ${i6} remove`,
        `custody_units ${u2} remove`,
      ]);
      expect(lines.filter((l) => l.event === 'sync.custody.ended').map((l) => l.id)).toEqual([i6, u2]);

      // The unit is deposited again, changed meanwhile: read again, fed as an insert; the ended
      // issuance is not asked for.
      reg.addToCustody('units', [u2]);
      reg.change('units', u2, { unitsQuantity: 7 });
      await m.query("UPDATE custody_ids SET ended_at = NULL WHERE kind = 'units' AND id = $1 RETURNING id", [
        u2,
      ]);
      const third = await sync(h.ctx, m, 'custody');
      expect(third).toMatchObject({
        status: 'succeeded',
        counts: { fetched: 20, inserted: 1, updated: 0, unchanged: 19, removed: 0, pages: 20 },
      });
      await expectCustodyEquals(m, h);
      expect(await feedAfter(m, seq + 4)).toEqual([`custody_units ${u2} insert`]);
      const runs = await m.query(
        "SELECT status, fetched, inserted, updated, removed, unchanged, quarantined, pages FROM sync_runs WHERE resource = 'custody' ORDER BY id",
      );
      expect(
        runs.map((r) =>
          Object.values(r).map((v) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v)),
        ),
      ).toEqual([
        ['succeeded', 21, 20, 0, 0, 0, 1, 21],
        ['succeeded', 19, 1, 1, 2, 17, 0, 21],
        ['succeeded', 20, 1, 0, 0, 19, 0, 20],
      ]);
    });
  });

  describe(`the custody store on ${kind}`, () => {
    it('a record read, its custody ended (once), then back: same tallies and feed', async () => {
      h = await harness({ projects: 5 });
      const m = await open(h);
      const def = custodyResources(h.ctx.config)[0]!;
      const now = () => new Date().toISOString();
      const custody = m.backend.store(def, now);
      const runs = m.backend;
      const runId = await startRun(runs.db, 'custody', 'full', 'manual', now(), null);
      const [id, record] = [...h.sim.registry.snapshot('projects')][0]!;
      const write = () =>
        custody.commitBatch({
          runId,
          records: [{ value: record, position: null }],
          trackSeen: false,
          checkpoint: null,
          counts: emptyCounts(),
        });
      expect((await write()).tally).toMatchObject({ inserted: 1 });
      expect((await write()).tally).toMatchObject({ unchanged: 1, inserted: 0 });
      expect(await custody.endCustody(runId, 'projects', id, emptyCounts())).toBe(true);
      expect(await custody.endCustody(runId, 'projects', id, emptyCounts())).toBe(false);
      expect(
        await scalar(m, 'SELECT count(*) AS n FROM custody_projects WHERE _custody_ended_at IS NOT NULL'),
      ).toBe(1);
      // Back in custody: fed as an insert, the end cleared.
      expect((await write()).tally).toMatchObject({ inserted: 1 });
      expect(
        await scalar(m, 'SELECT count(*) AS n FROM custody_projects WHERE _custody_ended_at IS NULL'),
      ).toBe(1);
      expect(await feedAfter(m, 0)).toEqual([
        `custody_projects ${id} insert`,
        `custody_projects ${id} remove`,
        `custody_projects ${id} insert`,
      ]);
    });
  });
}
