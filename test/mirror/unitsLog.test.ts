import { afterEach, describe, expect, it } from 'vitest';
import { runSync } from '../../src/mirror/syncRun.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { captureLog, count, expectMirrorEqualsRegistry, type Harness, harness, noSleep } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const UNITS = '/integration/v1/units';

describe('units log', () => {
  it('syncs incrementally: pages fetched grow with new operations, not with history', async () => {
    h = await harness({ units: 1000 }, { 'sync.page_size': 100, 'sync.units_overlap': 10 });
    const first = await runSync(h.ctx, 'units', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(first).toMatchObject({ status: 'succeeded', mode: 'full' });
    expect(first.counts.inserted).toBe(1000);

    h.sim.registry.appendUnits(15);
    h.sim.stats.reset();
    const next = await runSync(h.ctx, 'units', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(next).toMatchObject({ status: 'succeeded', mode: 'incremental' });
    expect(next.counts).toMatchObject({ inserted: 15, updated: 0, fetched: 25 });
    // offset 990: one page of 25 records (overlap 10 + 15 new), nothing of the 990 before it, then
    // the empty page at 1015 that proves the end (a short page may be an operator's silent cap).
    expect(h.sim.stats.count(UNITS)).toBe(2);
    expectMirrorEqualsRegistry(h, ['unit_operations']);
    const positions = h.ctx.database.sqlite
      .prepare(
        'SELECT min(_position) lo, max(_position) hi, count(DISTINCT _position) n FROM unit_operations',
      )
      .get();
    expect(positions).toEqual({ lo: 0, hi: 1014, n: 1015 });
  });

  it('falls back to a full scan, logged, when the overlap no longer matches', async () => {
    h = await harness({ units: 200 }, { 'sync.page_size': 50, 'sync.units_overlap': 10 });
    await runSync(h.ctx, 'units', { backend: sqliteBackend(h.ctx.database.sqlite), sleep: noSleep });
    const reg = h.sim.registry;
    const ids = [...reg.snapshot('units').keys()];
    reg.change('units', ids[195]!, { unitsStatus: 'Retired' }); // inside the overlap
    reg.remove('units', ids[3]!); // shifts every later position
    reg.appendUnits(5);
    const outcome = await runSync(h.ctx, 'units', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(outcome).toMatchObject({ status: 'succeeded', mode: 'full' });
    expect(outcome.counts).toMatchObject({ inserted: 5, updated: 1, removed: 1 });
    expectMirrorEqualsRegistry(h, ['unit_operations']);
    const run = h.ctx.database.sqlite.prepare('SELECT mode FROM sync_runs ORDER BY id DESC LIMIT 1').get();
    expect(run).toEqual({ mode: 'full' });
    // After the fallback the log is consistent again: the next run is incremental and reads one page
    // (plus the empty one that ends it).
    h.sim.stats.reset();
    const again = await runSync(h.ctx, 'units', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(again).toMatchObject({ status: 'succeeded', mode: 'incremental' });
    expect(h.sim.stats.count(UNITS)).toBe(2);
  });

  it('reads a units list served unpaginated (streamed, larger than the buffer) correctly', async () => {
    // A small body limit makes the client stream the body, as it would for a huge one.
    h = await harness(
      { units: 3000, unitsUnpaginated: true },
      { 'sync.page_size': 100, 'operator.max_body_bytes': 64 * 1024 },
    );
    const first = await runSync(h.ctx, 'units', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(first).toMatchObject({ status: 'succeeded' });
    expect(first.counts.inserted).toBe(3000);
    expect(h.sim.stats.count(UNITS)).toBe(1);
    expectMirrorEqualsRegistry(h, ['unit_operations']);
    expect(count(h.ctx, 'SELECT count(DISTINCT _position) n FROM unit_operations')).toBe(3000);

    h.sim.registry.appendUnits(7);
    const next = await runSync(h.ctx, 'units', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(next).toMatchObject({ status: 'succeeded', mode: 'incremental' });
    expect(next.counts).toMatchObject({ inserted: 7, updated: 0 });
    expectMirrorEqualsRegistry(h, ['unit_operations']);
  });

  it('a streamed body that breaks part-way is read again within the run: each record written once', async () => {
    h = await harness(
      { units: 3000, unitsUnpaginated: true },
      { 'sync.page_size': 100, 'operator.max_body_bytes': 64 * 1024 },
    );
    const lines = captureLog(h.ctx);
    // Half the body arrives (past the buffer, so batches are already committed), then the socket dies.
    h.sim.faults.next(1, 'truncated', { truncateMode: 'short-body', pathPrefix: UNITS });
    const first = await runSync(h.ctx, 'units', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(first, first.error ?? '').toMatchObject({ status: 'succeeded', mode: 'full' });
    expect(lines.filter((l) => l.event === 'sync.page.retry')).toHaveLength(1);
    expect(h.sim.stats.count(UNITS)).toBe(2);
    // The records of the broken half were committed once and found unchanged when read again.
    expect(first.counts.inserted).toBe(3000);
    expect(first.counts.unchanged).toBeGreaterThan(0);
    expect(count(h.ctx, "SELECT count(*) n FROM changes WHERE resource = 'unit_operations'")).toBe(3000);
    expectMirrorEqualsRegistry(h, ['unit_operations']);

    // The same break during an incremental run, after new operations were written (half of 7000 is
    // past the 3000 held): those are held when read again, not rewritten.
    h.sim.registry.appendUnits(4000);
    h.sim.faults.next(1, 'truncated', { truncateMode: 'short-body', pathPrefix: UNITS });
    const next = await runSync(h.ctx, 'units', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(next, next.error ?? '').toMatchObject({ status: 'succeeded', mode: 'incremental' });
    expect(next.counts).toMatchObject({ inserted: 4000, updated: 0 });
    expect(count(h.ctx, "SELECT count(*) n FROM changes WHERE resource = 'unit_operations'")).toBe(7000);
    expectMirrorEqualsRegistry(h, ['unit_operations']);
  });

  it('reads a projects list that ignores paging as one body', async () => {
    h = await harness({ projects: 120, projectsUnpaginated: true }, { 'sync.page_size': 50 });
    const outcome = await runSync(h.ctx, 'projects', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(outcome.status).toBe('succeeded');
    expect(outcome.counts.inserted).toBe(120);
    expect(h.sim.stats.count('/integration/v1/projects')).toBe(1);
    expectMirrorEqualsRegistry(h, ['projects']);
  });
});
