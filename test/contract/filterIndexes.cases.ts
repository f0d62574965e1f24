import { afterEach, describe, expect, it } from 'vitest';
import { type ListRequest, mirrorReads } from '../../src/api/mirrorQueries.js';
import type { MirrorBackend } from '../../src/mirror/backend.js';
import { SyncCoordinator } from '../../src/mirror/coordinator.js';
import {
  createIndex,
  dropIndex,
  filterIndexes,
  indexNames,
  missingIndexes,
} from '../../src/mirror/filterIndexes.js';
import { run } from '../../src/store/script.js';
import { tempDir } from '../helpers/context.js';
import { captureLog, type Harness, harness } from '../mirror/harness.js';
import { daemonEnv, daemonToml, spawnCli, until, writeToml } from '../ops/child.js';
import { sync } from './mirrorExactness.cases.js';
import { expectMirrorEquals, type MirrorUnderTest, scalar } from './mirrorStores.js';

/**
 * The units log's filter indexes, built after a first full load instead of row by row, the same
 * cases on SQLite (filterIndexes.sqlite.test.ts) and PostgreSQL (filterIndexes.pg.test.ts): the DDL
 * this code spells is what the migrations created; a first load drops them and builds them before
 * its run finishes, a later scan keeps them; a run that fails mid-load builds them anyway; a load
 * killed with SIGKILL leaves them missing, the API's reads still answer the same, and the next
 * run or the mirror's start puts them back.
 */

const TABLE = 'unit_operations';
const UNITS = '/integration/v1/units';
const FILTER_NAMES = filterIndexes(TABLE)
  .map((s) => s.name)
  .sort();

/** One store under test: how to open it fresh and read its catalog. */
export interface IndexesStore {
  /** A fresh, migrated store for the harness's simulator. */
  open(h: Harness): Promise<MirrorUnderTest>;
  /** What points a `vcu-sync` child at the same store (VCU_SYNC_DB or VCU_SYNC_DATABASE_URL). */
  childEnv(h: Harness): NodeJS.ProcessEnv;
  /**
   * The table's indexes as the store's catalog defines them (everything that makes one: columns
   * in order, uniqueness, method), by name.
   */
  definitions(
    m: MirrorUnderTest,
    table: string,
  ): Promise<Record<string, { columns: string[]; text: string }>>;
}

/** The backend, its stores telling `seen` which filter indexes are missing at each commit. */
function watchCommits(backend: MirrorBackend, seen: string[][]): MirrorBackend {
  return {
    ...backend,
    store(def, now, lease, shape) {
      const inner = backend.store(def, now, lease, shape);
      return {
        ...inner,
        async commitBatch(batch) {
          if (def.table === TABLE)
            seen.push((await missingIndexes(backend.db, TABLE)).map((s) => s.name).sort());
          return inner.commitBatch(batch);
        },
      };
    },
  };
}

const missing = async (m: MirrorUnderTest) =>
  (await missingIndexes(m.backend.db, TABLE)).map((s) => s.name).sort();

/** The API's reads of the units log by each of its filters, every page. */
async function filteredReads(m: MirrorUnderTest): Promise<unknown[]> {
  const reads = mirrorReads(m.backend.db);
  const requests: Partial<ListRequest>[] = [
    { filters: [{ column: 'unitsStatus', op: '=', value: 'Issued' }] },
    { filters: [{ column: 'unitsIssuanceID', op: '=', value: '1' }] },
    {
      filters: [
        { column: 'unitsDate', op: '>=', value: '2016-01-01' },
        { column: 'unitsStatus', op: '=', value: 'Issued' },
      ],
      dateOrder: 'unitsDate',
    },
  ];
  const answers: unknown[] = [];
  for (const r of requests) {
    let after: string | undefined;
    let afterDate: string | undefined;
    do {
      const page = await reads.list({
        resource: TABLE,
        removed: 'false',
        limit: 97,
        filters: [],
        ...r,
        after,
        afterDate,
      });
      answers.push(page.rows.map((row) => row.unitsOperationID));
      after = page.lastKey ?? undefined;
      afterDate = page.lastDate;
    } while (after !== undefined);
  }
  return answers;
}

/** Registers the cases on `kind`. */
export function filterIndexesCases(kind: 'sqlite' | 'postgres', store: IndexesStore): void {
  let h: Harness | undefined;
  let cleanup: (() => void) | undefined;
  afterEach(async () => {
    await h?.close();
    cleanup?.();
    h = undefined;
    cleanup = undefined;
  });

  describe(`the units log's filter indexes on ${kind}`, () => {
    it('are spelled as the migrations created them: dropped and created by this code, the catalog says the same', async () => {
      h = await harness({ units: 10 });
      const m = await store.open(h);
      const migrated = await store.definitions(m, TABLE);
      for (const spec of filterIndexes(TABLE)) expect(migrated[spec.name]?.columns).toEqual(spec.on);
      // The sync's own index is not one of them.
      expect(Object.keys(migrated)).toContain('unit_operations_position_idx');
      expect(FILTER_NAMES).not.toContain('unit_operations_position_idx');
      for (const spec of filterIndexes(TABLE)) await m.backend.db.write(run(dropIndex(spec)));
      expect(await missing(m)).toEqual(FILTER_NAMES);
      for (const spec of filterIndexes(TABLE)) await m.backend.db.write(run(createIndex(TABLE, spec)));
      expect(await store.definitions(m, TABLE)).toEqual(migrated);
      // Run again, IF NOT EXISTS: nothing changes.
      for (const spec of filterIndexes(TABLE)) await m.backend.db.write(run(createIndex(TABLE, spec)));
      expect(await store.definitions(m, TABLE)).toEqual(migrated);
    });

    it('a first full load drops them and builds them before its run finishes; a later full scan keeps them', async () => {
      h = await harness({ projects: 30, units: 1150 }, { 'sync.page_size': 100 });
      const m = await store.open(h);
      const lines = captureLog(h.ctx);
      const seen: string[][] = [];
      const watched = { ...m, backend: watchCommits(m.backend, seen) };
      expect(await sync(h.ctx, watched, 'units')).toMatchObject({
        status: 'succeeded',
        counts: { inserted: 1150 },
      });
      expect(seen.length).toBeGreaterThan(0);
      for (const commit of seen) expect(commit).toEqual(FILTER_NAMES);
      expect(await missing(m)).toEqual([]);
      await expectMirrorEquals(m, h, ['unit_operations']);
      const events = lines.filter(
        (l) => String(l.event).startsWith('mirror.indexes') || l.event === 'sync.run.finished',
      );
      expect(events.map((l) => l.event)).toEqual([
        'mirror.indexes.deferred',
        'mirror.indexes.built',
        'sync.run.finished',
      ]);
      expect(events[1]).toMatchObject({
        table: TABLE,
        why: 'first-load',
        indexes: filterIndexes(TABLE).map((s) => s.name),
      });
      expect(typeof events[1]!.ms).toBe('number');
      // The key and the sync's `_position` stayed throughout: only the filter indexes went.
      const names = (await m.backend.db.read<{ name: string }>(indexNames(TABLE))).map((r) => r.name);
      expect(names).toContain('unit_operations_position_idx');

      seen.length = 0;
      lines.length = 0;
      h.sim.registry.appendUnits(20);
      expect(await sync(h.ctx, watched, 'units', { full: true })).toMatchObject({ status: 'succeeded' });
      for (const commit of seen) expect(commit).toEqual([]);
      expect(lines.filter((l) => String(l.event).startsWith('mirror.indexes'))).toEqual([]);
      // A list without filter indexes is left alone.
      expect(await sync(h.ctx, m, 'projects')).toMatchObject({ status: 'succeeded' });
      expect(lines.filter((l) => String(l.event).startsWith('mirror.indexes'))).toEqual([]);
      await expectMirrorEquals(m, h, ['projects', 'unit_operations']);
    });

    it('a first load that fails midway builds them anyway; the next run resumes with them', async () => {
      h = await harness({ units: 1150 }, { 'sync.page_size': 100, 'sync.page_attempts': 2 });
      const m = await store.open(h);
      let failing = false;
      const failed = await sync(h.ctx, m, 'units', {
        onProgress: (counts) => {
          // Once some rows are in, every request for units fails.
          if (failing || counts.inserted === 0) return;
          failing = true;
          h!.sim.faults.next(1000, '503', { pathPrefix: UNITS });
        },
      });
      expect(failed.status).toBe('failed');
      const loaded = await scalar(m, `SELECT count(*) AS n FROM ${TABLE}`);
      expect(loaded).toBeGreaterThan(0);
      expect(loaded).toBeLessThan(1150);
      expect(await missing(m)).toEqual([]);
      h.sim.faults.clear();
      expect(await sync(h.ctx, m, 'units')).toMatchObject({ status: 'succeeded' });
      await expectMirrorEquals(m, h, ['unit_operations']);
    });

    it('a run puts back what a stopped first load left missing, before it writes', async () => {
      h = await harness({ units: 400 });
      const m = await store.open(h);
      expect(await sync(h.ctx, m, 'units')).toMatchObject({ status: 'succeeded' });
      // As a load killed midway leaves them (the table not empty, the indexes gone).
      for (const spec of filterIndexes(TABLE).slice(1)) await m.backend.db.write(run(dropIndex(spec)));
      const lines = captureLog(h.ctx);
      const seen: string[][] = [];
      h.sim.registry.appendUnits(30);
      expect(await sync(h.ctx, { ...m, backend: watchCommits(m.backend, seen) }, 'units')).toMatchObject({
        status: 'succeeded',
        mode: 'incremental',
      });
      for (const commit of seen) expect(commit).toEqual([]);
      expect(lines.find((l) => l.event === 'mirror.indexes.built')).toMatchObject({
        why: 'restored',
        indexes: filterIndexes(TABLE)
          .slice(1)
          .map((s) => s.name),
      });
      await expectMirrorEquals(m, h, ['unit_operations']);
    });

    it('a first load killed with SIGKILL leaves them missing; reads answer the same; the mirror start puts them back, the next run completes', async () => {
      // Each units page answers after 40 ms, so the load is caught with some rows in.
      h = await harness({ units: 3000, faults: { latencyMs: 40 } });
      const m = await store.open(h);
      const conf = tempDir('vcu-sync-indexes-');
      cleanup = conf.cleanup;
      const config = writeToml(conf.dir, daemonToml({ onStartup: false, pageSize: 50 }));
      const env = daemonEnv(conf.dir, h.sim.url, config, store.childEnv(h));
      const child = spawnCli(['sync', 'units'], env);
      const rows = () => scalar(m, `SELECT count(*) AS n FROM ${TABLE}`);
      await until(
        () => `rows in ${TABLE}; output:\n${child.output().slice(-2000)}`,
        async () => (await rows()) > 0,
      );
      child.child.kill('SIGKILL');
      expect(await child.exited).toBeNull();
      expect(child.events().some((e) => e.event === 'mirror.indexes.deferred')).toBe(true);
      expect(await rows()).toBeLessThan(3000);
      expect(await missing(m)).toEqual(FILTER_NAMES);

      // The API's filters answer from the table alone, the same as with the indexes.
      const withoutIndexes = await filteredReads(m);
      expect(withoutIndexes.flat().length).toBeGreaterThan(0);

      const lines = captureLog(h.ctx);
      // The mirror's start (the daemon's scheduler starts its runner first).
      await new SyncCoordinator(h.ctx, () => m.backend).start();
      expect(await missing(m)).toEqual([]);
      expect(lines.find((l) => l.event === 'mirror.indexes.built')).toMatchObject({
        table: TABLE,
        why: 'restored',
      });
      expect(await filteredReads(m)).toEqual(withoutIndexes);

      h.sim.faults.rates.latencyMs = 0;
      expect(await sync(h.ctx, m, 'units')).toMatchObject({ status: 'succeeded' });
      expect(await missing(m)).toEqual([]);
      await expectMirrorEquals(m, h, ['unit_operations']);
      const statuses = await m.query('SELECT status FROM sync_runs ORDER BY id');
      expect(statuses.map((r) => r.status)).toEqual(['interrupted', 'succeeded']);
    });
  });
}
