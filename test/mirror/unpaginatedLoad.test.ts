import { afterEach, describe, expect, it } from 'vitest';
import { deferIndexes, deferredKey } from '../../src/mirror/deferredIndexes.js';
import { listResources } from '../../src/mirror/resources.js';
import { commitDue, HELD_BYTES, HELD_RECORDS, HELD_STREAM_BYTES } from '../../src/mirror/scan/heldWrites.js';
import { runSync } from '../../src/mirror/syncRun.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { count, expectMirrorEqualsRegistry, type Harness, harness, noSleep } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const UNITS = '/integration/v1/units';

/** The secondary indexes of `unit_operations` as SQLite knows them: name and statement. */
function unitIndexes(harness: Harness): { name: string; sql: string }[] {
  return harness.ctx.database.sqlite
    .prepare(
      "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'unit_operations' AND sql IS NOT NULL ORDER BY name",
    )
    .all() as { name: string; sql: string }[];
}

const pendingDeferral = (harness: Harness) =>
  count(harness.ctx, `SELECT count(*) n FROM daemon_state WHERE key = '${deferredKey('unit_operations')}'`);

describe('the units log served in one unpaginated body', () => {
  it('holds less of a streamed body than of pages read whole, and never more than the record bound', () => {
    const held = (bytes: number, streamed: boolean) => ({ records: 100, bytes, streamed });
    expect(HELD_STREAM_BYTES).toBeLessThan(HELD_BYTES);
    expect(commitDue(held(HELD_STREAM_BYTES, true), 0)).toBe(true);
    expect(commitDue(held(HELD_STREAM_BYTES, false), 0)).toBe(false);
    expect(commitDue(held(HELD_BYTES, false), 0)).toBe(true);
    expect(commitDue({ records: HELD_RECORDS, bytes: 0, streamed: true }, 0)).toBe(true);
    expect(commitDue(held(0, true), 999)).toBe(false);
    expect(commitDue(held(0, true), 1000)).toBe(true);
  });

  it('commits a streamed body in held batches of bounded size, not one commit per page', async () => {
    // A small body limit makes the client stream the body, as it would for a huge one.
    h = await harness(
      { units: 5000, unitsUnpaginated: true },
      { 'sync.page_size': 100, 'operator.max_body_bytes': 64 * 1024 },
    );
    const commits: number[] = [];
    let inserted = 0;
    const outcome = await runSync(h.ctx, 'units', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
      onProgress: (counts) => {
        commits.push(counts.inserted - inserted);
        inserted = counts.inserted;
      },
    });
    expect(outcome, outcome.error ?? '').toMatchObject({ status: 'succeeded', mode: 'full' });
    expect(outcome.counts.inserted).toBe(5000);
    expect(h.sim.stats.count(UNITS)).toBe(1);
    // Streamed batches of 100 (the page size) wait for the ones after them: a commit holds several...
    expect(Math.max(...commits)).toBeGreaterThan(100);
    expect(commits.length).toBeLessThan(50);
    // ...and never more than the held bound.
    expect(Math.max(...commits)).toBeLessThanOrEqual(HELD_RECORDS);
    expectMirrorEqualsRegistry(h, ['unit_operations']);
  });

  it('a first load builds its indexes after the rows; a later run keeps them while it writes', async () => {
    h = await harness(
      { units: 3000, unitsUnpaginated: true },
      { 'sync.page_size': 100, 'operator.max_body_bytes': 64 * 1024 },
    );
    const before = unitIndexes(h);
    expect(before.length).toBeGreaterThan(0);
    const during: number[] = [];
    const loaded = await runSync(h.ctx, 'units', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
      onProgress: () => during.push(unitIndexes(h as Harness).length),
    });
    expect(loaded, loaded.error ?? '').toMatchObject({ status: 'succeeded', mode: 'full' });
    expect(during.length).toBeGreaterThan(0);
    expect(during.every((n) => n === 0)).toBe(true);
    expect(unitIndexes(h)).toEqual(before);
    expect(pendingDeferral(h)).toBe(0);
    expectMirrorEqualsRegistry(h, ['unit_operations']);

    h.sim.registry.appendUnits(50);
    const seenNext: number[] = [];
    const next = await runSync(h.ctx, 'units', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
      full: true,
      onProgress: () => seenNext.push(unitIndexes(h as Harness).length),
    });
    expect(next, next.error ?? '').toMatchObject({ status: 'succeeded', mode: 'full' });
    expect(seenNext.every((n) => n === before.length)).toBe(true);
    expect(unitIndexes(h)).toEqual(before);
    expectMirrorEqualsRegistry(h, ['unit_operations']);
  });

  it('a first load that fails part-way leaves its indexes built; the next run resumes with them', async () => {
    h = await harness(
      { units: 3000, unitsUnpaginated: true },
      { 'sync.page_size': 100, 'operator.max_body_bytes': 64 * 1024, 'sync.page_attempts': 2 },
    );
    const before = unitIndexes(h);
    // Every attempt's body breaks half-way, past the records already committed.
    h.sim.faults.next(2, 'truncated', { truncateMode: 'short-body', pathPrefix: UNITS });
    const failed = await runSync(h.ctx, 'units', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(failed.status).toBe('failed');
    expect(count(h.ctx, 'SELECT count(*) n FROM unit_operations')).toBeGreaterThan(0);
    expect(unitIndexes(h)).toEqual(before);
    expect(pendingDeferral(h)).toBe(0);

    const resumed = await runSync(h.ctx, 'units', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(resumed, resumed.error ?? '').toMatchObject({ status: 'succeeded' });
    expect(unitIndexes(h)).toEqual(before);
    expectMirrorEqualsRegistry(h, ['unit_operations']);
  });

  it('indexes a crashed first load left dropped are built by the next run before it writes', async () => {
    h = await harness(
      { units: 2000, unitsUnpaginated: true },
      { 'sync.page_size': 100, 'operator.max_body_bytes': 64 * 1024 },
    );
    const before = unitIndexes(h);
    const backend = sqliteBackend(h.ctx.database.sqlite);
    const units = listResources(h.ctx.config).units;
    // What a process killed during its first load leaves: indexes dropped, their definitions saved,
    // and some rows written.
    expect(await deferIndexes(backend.db, units, new Date(0).toISOString(), h.ctx.log)).toBe(before.length);
    expect(unitIndexes(h)).toEqual([]);
    h.ctx.database.sqlite
      .prepare(
        "INSERT INTO unit_operations (unitsOperationID, _raw, _hash, _first_seen_at, _last_seen_at) VALUES ('left-behind', '{}', 'x', 'then', 'then')",
      )
      .run();
    const during: number[] = [];
    const next = await runSync(h.ctx, 'units', {
      backend,
      sleep: noSleep,
      onProgress: () => during.push(unitIndexes(h as Harness).length),
    });
    expect(next, next.error ?? '').toMatchObject({ status: 'succeeded' });
    expect(during.every((n) => n === before.length)).toBe(true);
    expect(unitIndexes(h)).toEqual(before);
    expect(pendingDeferral(h)).toBe(0);
    expectMirrorEqualsRegistry(h, ['unit_operations']);
  });
});
