import { afterEach, describe, expect, it } from 'vitest';
import { commitDue, HELD_BYTES, HELD_RECORDS, HELD_STREAM_BYTES } from '../../src/mirror/scan/heldWrites.js';
import { runSync } from '../../src/mirror/syncRun.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { expectMirrorEqualsRegistry, type Harness, harness, noSleep } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const UNITS = '/integration/v1/units';

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
});
