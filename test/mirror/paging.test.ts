import path from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { SqliteContext } from '../../src/app/sqliteStores.js';
import { openSqliteContext } from '../../src/app/sqliteStores.js';
import { loadConfig } from '../../src/config/config.js';
import { runSync } from '../../src/mirror/syncRun.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { getHealth } from '../helpers/health.js';
import { sqliteApiComponent } from '../helpers/sqliteApi.js';
import { captureLog, count, expectMirrorEqualsRegistry, type Harness, harness, noSleep } from './harness.js';

let h: Harness | undefined;
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await h?.close();
  h = undefined;
});

const PROJECTS = '/integration/v1/projects';
const UNITS = '/integration/v1/units';
const TOKEN = 'paging-test-token-0123456789';

const events = (lines: Record<string, unknown>[], event: string) => lines.filter((l) => l.event === event);
const liveCount = (ctx: SqliteContext, table: string) =>
  count(ctx, `SELECT count(*) n FROM ${table} WHERE _removed_at IS NULL`);

/** A second context on the harness's database file, as the next process would open it. */
function reopen(hh: Harness, overrides: Record<string, unknown>): SqliteContext {
  const config = loadConfig({
    env: { VCU_SYNC_DB: path.join(hh.ctx.dir, 'test.db') },
    overrides: {
      'operator.url': hh.sim.url,
      'operator.api_key': 'sim-api-key',
      'operator.rate_per_second': 100_000,
      ...overrides,
    },
  });
  const ctx = openSqliteContext(config, hh.ctx.log);
  cleanups.push(() => {
    ctx.operator().close();
    ctx.database.close();
  });
  return ctx;
}

async function syncAll(ctx: SqliteContext) {
  const outcomes = [];
  for (const target of ['projects', 'issuances', 'units'] as const) {
    outcomes.push(
      await runSync(ctx, target, { backend: sqliteBackend(ctx.database.sqlite), sleep: noSleep }),
    );
  }
  return outcomes;
}

describe('an operator that caps limit silently', () => {
  it('mirrors every record, learns the page size once, keeps it across runs, shows it in /status and metrics', async () => {
    const paging = { 'sync.page_size': 500, 'sync.units_overlap': 10 };
    h = await harness(
      { projects: 230, issuances: 420, units: 1150, maxPageSize: 100 },
      { ...paging, 'api.listen': '127.0.0.1:0', 'api.token': TOKEN },
    );
    const lines = captureLog(h.ctx);
    const first = await syncAll(h.ctx);
    expect(first.map((o) => o.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(first.map((o) => o.counts.inserted)).toEqual([230, 420, 1150]);
    expectMirrorEqualsRegistry(h);
    const capped = events(lines, 'sync.list.page_capped');
    expect(capped.map((l) => [l.resource, l.requested, l.pageSize])).toEqual([
      ['projects', 500, 100],
      ['issuances', 500, 100],
      ['units', 500, 100],
    ]);

    // The next process: the upstream changed; the units log goes on incrementally with pages of 100.
    const reg = h.sim.registry;
    reg.appendUnits(30);
    reg.change('projects', [...reg.snapshot('projects').keys()][150]!, { projectStatus: 'Registered' });
    const gone = [...reg.snapshot('issuances').keys()].slice(300, 303);
    for (const id of gone) reg.remove('issuances', id);
    const ctx2 = reopen(h, paging);
    const next = await syncAll(ctx2);
    expect(next.map((o) => [o.status, o.mode])).toEqual([
      ['succeeded', 'full'],
      ['succeeded', 'full'],
      ['succeeded', 'incremental'],
    ]);
    expect(next.map((o) => [o.counts.inserted, o.counts.updated, o.counts.removed])).toEqual([
      [0, 1, 0],
      [0, 0, 3],
      [30, 0, 0],
    ]);
    expectMirrorEqualsRegistry(h);
    // Learned once: the second process knew it already.
    expect(events(lines, 'sync.list.page_capped')).toHaveLength(3);

    // It pages with 100 from now on, even where the operator would now serve more: 230 projects
    // are 0-99, 99-198, 198-229, then the anchor alone (with 500: all of them, then the anchor).
    h.sim.state.settings.maxPageSize = 1000;
    h.sim.stats.reset();
    expect(
      (await runSync(ctx2, 'projects', { backend: sqliteBackend(ctx2.database.sqlite), sleep: noSleep }))
        .status,
    ).toBe('succeeded');
    expect(h.sim.stats.count(PROJECTS)).toBe(4);

    const api = sqliteApiComponent(h.ctx);
    await api.start();
    cleanups.push(() => api.stop());
    const base = `http://127.0.0.1:${api.address()!.port}`;
    const auth = { authorization: `Bearer ${TOKEN}` };
    const status = (await (await fetch(`${base}/status`, { headers: auth })).json()) as {
      snapshot: { resources: { resource: string; effectivePageSize: number | null }[] };
    };
    expect(status.snapshot.resources.map((r) => [r.resource, r.effectivePageSize])).toEqual([
      ['projects', 100],
      ['issuances', 100],
      ['units', 100],
      ['custody', null],
    ]);
    const metrics = await (await fetch(`${base}/metrics`, { headers: auth })).text();
    for (const resource of ['projects', 'issuances', 'units'])
      expect(metrics).toContain(`vcu_sync_effective_page_size{resource="${resource}"} 100\n`);
    expect(metrics).not.toContain('vcu_sync_effective_page_size{resource="custody"}');
  });

  it('shows the configured page size where no cap was seen', async () => {
    h = await harness({ projects: 30 }, { 'sync.page_size': 50 });
    await runSync(h.ctx, 'projects', { backend: sqliteBackend(h.ctx.database.sqlite), sleep: noSleep });
    const health = getHealth(h.ctx.database.sqlite, h.ctx.config, Date.now());
    expect(health.snapshot.resources.find((r) => r.resource === 'projects')?.effectivePageSize).toBe(50);
    // Nothing is kept for a list that was read in full with no cap.
    expect(count(h.ctx, "SELECT count(*) n FROM sync_checkpoints WHERE resource = 'projects'")).toBe(0);
  });

  it('a cap that appears later reads every record and removes only what really left', async () => {
    h = await harness({ projects: 230 }, { 'sync.page_size': 500, 'sync.max_remove_share': 1 });
    expect(
      (await runSync(h.ctx, 'projects', { backend: sqliteBackend(h.ctx.database.sqlite), sleep: noSleep }))
        .counts.inserted,
    ).toBe(230);
    h.sim.state.settings.maxPageSize = 100;
    const ids = [...h.sim.registry.snapshot('projects').keys()];
    h.sim.registry.remove('projects', ids[10]!);
    h.sim.registry.remove('projects', ids[220]!);
    const outcome = await runSync(h.ctx, 'projects', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    // Ending at the first short page would have removed the 128 records after it.
    expect(outcome).toMatchObject({ status: 'succeeded', counts: { removed: 2 } });
    expect(liveCount(h.ctx, 'projects')).toBe(228);
    expectMirrorEqualsRegistry(h, ['projects']);
  });
});

describe('a scan that ended early never tombstones', () => {
  it('stopped by sync.max_pages: nothing removed; the resumed scan completes and removes', async () => {
    h = await harness({ projects: 120 }, { 'sync.page_size': 20, 'sync.max_remove_share': 1 });
    await runSync(h.ctx, 'projects', { backend: sqliteBackend(h.ctx.database.sqlite), sleep: noSleep });
    const ids = [...h.sim.registry.snapshot('projects').keys()];
    for (const id of ids.slice(100, 105)) h.sim.registry.remove('projects', id);
    h.ctx.config.sync.max_pages = 2;
    const cut = await runSync(h.ctx, 'projects', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(cut.status).toBe('failed');
    expect(cut.error).toMatch(/sync\.max_pages=2/);
    expect(cut.counts.removed).toBe(0);
    expect(liveCount(h.ctx, 'projects')).toBe(120);
    expect(count(h.ctx, "SELECT count(*) n FROM changes WHERE kind = 'remove'")).toBe(0);
    h.ctx.config.sync.max_pages = 100;
    const resumed = await runSync(h.ctx, 'projects', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(resumed).toMatchObject({ status: 'succeeded', counts: { removed: 5 } });
    expectMirrorEqualsRegistry(h, ['projects']);
  });

  it('stopped between pages: nothing removed', async () => {
    h = await harness({ projects: 120 }, { 'sync.page_size': 20, 'sync.max_remove_share': 1 });
    await runSync(h.ctx, 'projects', { backend: sqliteBackend(h.ctx.database.sqlite), sleep: noSleep });
    for (const id of [...h.sim.registry.snapshot('projects').keys()].slice(0, 5))
      h.sim.registry.remove('projects', id);
    const stop = new AbortController();
    const outcome = await runSync(h.ctx, 'projects', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
      signal: stop.signal,
      onProgress: () => stop.abort(),
    });
    expect(outcome).toMatchObject({ status: 'interrupted', counts: { removed: 0 } });
    expect(liveCount(h.ctx, 'projects')).toBe(120);
  });

  it('a list that ignores offset but honours limit: one page read, nothing removed, said in the log', async () => {
    h = await harness({ projects: 120 }, { 'sync.page_size': 20, 'sync.max_remove_share': 1 });
    await runSync(h.ctx, 'projects', { backend: sqliteBackend(h.ctx.database.sqlite), sleep: noSleep });
    const lines = captureLog(h.ctx);
    for (const id of [...h.sim.registry.snapshot('projects').keys()].slice(50, 55))
      h.sim.registry.remove('projects', id);
    h.sim.faults.next(2, 'ignore-offset', { pathPrefix: PROJECTS });
    const outcome = await runSync(h.ctx, 'projects', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    // The first 20 records twice: the other 95 were never seen, so none may be removed.
    expect(outcome.counts).toMatchObject({ fetched: 20, removed: 0 });
    expect(liveCount(h.ctx, 'projects')).toBe(120);
    const skipped = events(lines, 'sync.remove.skipped');
    expect(skipped).toHaveLength(1);
    expect(String(skipped[0]!.msg)).toMatch(/ignores offset and answered only 20 records/);
    // Once the list pages again, the removals happen.
    const clean = await runSync(h.ctx, 'projects', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(clean).toMatchObject({ status: 'succeeded', counts: { removed: 5 } });
    expectMirrorEqualsRegistry(h, ['projects']);
  });
});

describe('a units log that ignores paging', () => {
  /** Positions 0..n-1, each once. */
  const expectPositions = (ctx: SqliteContext, n: number) =>
    expect(
      ctx.database.sqlite
        .prepare(
          'SELECT min(_position) lo, max(_position) hi, count(DISTINCT _position) n FROM unit_operations',
        )
        .get(),
    ).toEqual({ lo: 0, hi: n - 1, n });

  for (const [name, units, pageSize] of [
    ['longer than page_size', 1000, 100],
    ['that fits in one page', 450, 500],
    ['exactly page_size long', 500, 500],
  ] as const) {
    it(`is read incrementally, writing only the new rows (${name})`, async () => {
      h = await harness(
        { units, unitsUnpaginated: true },
        { 'sync.page_size': pageSize, 'sync.units_overlap': 100 },
      );
      const lines = captureLog(h.ctx);
      const first = await runSync(h.ctx, 'units', {
        backend: sqliteBackend(h.ctx.database.sqlite),
        sleep: noSleep,
      });
      expect(first).toMatchObject({ status: 'succeeded', mode: 'full', counts: { inserted: units } });

      for (const added of [0, 7, 40]) {
        h.sim.registry.appendUnits(added);
        h.sim.stats.reset();
        const changesBefore = count(h.ctx, 'SELECT count(*) n FROM changes');
        const next = await runSync(h.ctx, 'units', {
          backend: sqliteBackend(h.ctx.database.sqlite),
          sleep: noSleep,
        });
        expect(next).toMatchObject({
          status: 'succeeded',
          mode: 'incremental',
          counts: { inserted: added, updated: 0, removed: 0 },
        });
        // One body, the whole log: nothing else is asked for.
        expect(h.sim.stats.count(UNITS)).toBe(1);
        expect(count(h.ctx, 'SELECT count(*) n FROM changes') - changesBefore).toBe(added);
      }
      expect(events(lines, 'sync.units.overlap_mismatch')).toHaveLength(0);
      expectMirrorEqualsRegistry(h, ['unit_operations']);
      expectPositions(h.ctx, units + 47);
    });
  }

  for (const [name, rewrite] of [
    ['an operation inside the overlap changed', (ids: string[]) => ['change', ids[ids.length - 5]!] as const],
    ['the first operation removed', (ids: string[]) => ['remove', ids[0]!] as const],
  ] as const) {
    it(`still falls back to a full scan when history was rewritten (${name})`, async () => {
      h = await harness(
        { units: 450, unitsUnpaginated: true },
        { 'sync.page_size': 500, 'sync.units_overlap': 100 },
      );
      const lines = captureLog(h.ctx);
      await runSync(h.ctx, 'units', { backend: sqliteBackend(h.ctx.database.sqlite), sleep: noSleep });
      const reg = h.sim.registry;
      const [op, id] = rewrite([...reg.snapshot('units').keys()]);
      if (op === 'change') reg.change('units', id, { unitsStatus: 'Retired' });
      else reg.remove('units', id);
      reg.appendUnits(3);
      const outcome = await runSync(h.ctx, 'units', {
        backend: sqliteBackend(h.ctx.database.sqlite),
        sleep: noSleep,
      });
      expect(outcome).toMatchObject({ status: 'succeeded', mode: 'full' });
      expect(outcome.counts).toMatchObject({
        inserted: 3,
        ...(op === 'change' ? { updated: 1 } : { removed: 1 }),
      });
      expect(events(lines, 'sync.units.overlap_mismatch')).toHaveLength(1);
      expectMirrorEqualsRegistry(h, ['unit_operations']);
      // Consistent again: the next run is incremental.
      expect(
        await runSync(h.ctx, 'units', { backend: sqliteBackend(h.ctx.database.sqlite), sleep: noSleep }),
      ).toMatchObject({
        status: 'succeeded',
        mode: 'incremental',
        counts: { inserted: 0, updated: 0 },
      });
    });
  }
});

describe('paging on a bad day (property)', () => {
  it('any list size, page size and silent cap: every record mirrored, only real removals, the cap learned when proven', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 120 }),
        fc.integer({ min: 2, max: 60 }),
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 0, max: 4 }),
        async (n, pageSize, cap, removals) => {
          const hh = await harness(
            { projects: n },
            { 'sync.page_size': pageSize, 'sync.max_remove_share': 1 },
          );
          try {
            const lines = captureLog(hh.ctx);
            expect(
              (
                await runSync(hh.ctx, 'projects', {
                  backend: sqliteBackend(hh.ctx.database.sqlite),
                  sleep: noSleep,
                })
              ).counts.inserted,
            ).toBe(n);
            hh.sim.state.settings.maxPageSize = cap;
            const ids = [...hh.sim.registry.snapshot('projects').keys()];
            const gone = ids.filter((_, i) => i % 7 === 3).slice(0, removals);
            for (const id of gone) hh.sim.registry.remove('projects', id);
            const outcome = await runSync(hh.ctx, 'projects', {
              backend: sqliteBackend(hh.ctx.database.sqlite),
              sleep: noSleep,
            });
            expect(outcome).toMatchObject({ status: 'succeeded', counts: { removed: gone.length } });
            expectMirrorEqualsRegistry(hh, ['projects']);
            // Proven by two pages of `cap` records, both with new ones: the first, and the next one
            // re-reading its last (a cap of 1 leaves no room after that record, so it is never proven).
            const m = n - gone.length;
            const proven = cap >= 2 && cap < pageSize && m >= 2 * cap - 1;
            expect(events(lines, 'sync.list.page_capped').map((l) => l.pageSize)).toEqual(
              proven ? [cap] : [],
            );
          } finally {
            await hh.close();
          }
        },
      ),
      {
        numRuns: 12,
        seed: 12,
        // A cap of 1 (nothing fits after the re-read record), a cap equal to the page size, an empty list.
        examples: [
          [40, 20, 1, 2],
          [120, 50, 50, 1],
          [0, 10, 3, 0],
        ],
      },
    );
  });
});
