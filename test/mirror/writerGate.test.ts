import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { emptyCounts } from '../../src/mirror/bookkeeping.js';
import { listResources } from '../../src/mirror/resources.js';
import type { Checkpoint } from '../../src/mirror/scan/checkpoint.js';
import { readCheckpoint, startRun } from '../../src/mirror/statements.js';
import type { BatchWrite } from '../../src/mirror/store.js';
import { Registry } from '../../src/simulator/registry.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { runSqlite } from '../../src/sqlite/scripts.js';
import * as writerGate from '../../src/sqlite/writerGate.js';
import { testContext } from '../helpers/context.js';

/**
 * A bulk write of the mirror gives way to a commit queue of another thread waiting for the lock
 * (sqlite/writerGate.ts): it commits the records written so far without their checkpoint, lets the
 * waiter take its turn, and finishes the batch, checkpoint last. The other thread is played here
 * by the gate's shared counter itself (what a waiting commit queue in another thread adds to it).
 */
const UNITS = 1000;
let ctx: ReturnType<typeof testContext>;
/** The gate's counter as another thread sees it. */
const otherThread = new Int32Array(writerGate.writerGateBuffer());

beforeEach(() => {
  ctx = testContext();
});
afterEach(() => {
  Atomics.store(otherThread, 0, 0);
  ctx.dispose();
});

/** One batch of every unit of a registry, its checkpoint at the batch's end, and the store's clock. */
function unitsBatch() {
  const registry = new Registry({ units: UNITS });
  const records = registry.page('units', 0, UNITS).map((value, i) => ({ value, position: i }));
  const units = listResources(ctx.config).units;
  const started = runSqlite(
    ctx.database.sqlite,
    startRun('units', 'full', 'manual', new Date().toISOString(), null),
  );
  const runId = Number(started.rows[0]!.id);
  const checkpoint: Checkpoint = {
    resource: 'units',
    runId,
    mode: 'full',
    nextOffset: UNITS,
    scanStartedAt: new Date().toISOString(),
    state: { inScan: true, trackSeen: false, logLength: UNITS },
  };
  const batch: BatchWrite = { runId, records, trackSeen: false, checkpoint, counts: emptyCounts() };
  const stamps: string[] = [];
  return { units, batch, stamps, now: () => stamps[stamps.push(`2026-11-25T00:00:0${stamps.length}Z`) - 1]! };
}

/** The units' checkpoint row as committed (undefined: none). */
const unitsCheckpoint = () => runSqlite(ctx.database.sqlite, readCheckpoint('units')).rows[0];

const rowsByStamp = () =>
  ctx.database.sqlite
    .prepare(
      'SELECT _first_seen_at AS at, count(*) AS n FROM unit_operations GROUP BY _first_seen_at ORDER BY at',
    )
    .all() as { at: string; n: number }[];

describe('the writer gate', () => {
  it('with no other writer waiting, a batch is one transaction with its checkpoint', async () => {
    const { units, batch, stamps, now } = unitsBatch();
    const result = await sqliteBackend(ctx.database.sqlite).store(units, now).commitBatch(batch);
    expect(result.tally.inserted).toBe(UNITS);
    expect(stamps).toHaveLength(1);
    expect(rowsByStamp()).toEqual([{ at: stamps[0], n: UNITS }]);
  });

  it('another thread waiting: the batch commits its first records, gives way, then the rest with the checkpoint', async () => {
    const { units, batch, stamps, now } = unitsBatch();
    Atomics.store(otherThread, 0, 1);
    let checkpointBetween: unknown = 'not looked';
    const store = sqliteBackend(ctx.database.sqlite).store(units, () => {
      if (stamps.length === 1) {
        // The second transaction begins: the first is committed, without the batch's checkpoint.
        checkpointBetween = unitsCheckpoint();
        // The waiter took its turn.
        Atomics.store(otherThread, 0, 0);
      }
      return now();
    });
    const result = await store.commitBatch(batch);

    expect(result.tally.inserted).toBe(UNITS);
    expect(stamps).toHaveLength(2);
    const [first, second] = rowsByStamp();
    expect(first!.at).toBe(stamps[0]);
    expect(first!.n).toBeGreaterThan(0);
    expect(first!.n).toBeLessThan(64);
    expect(first!.n + second!.n).toBe(UNITS);
    expect(checkpointBetween).toBeUndefined();
    expect(unitsCheckpoint()?.next_offset).toBe(UNITS);
  });

  it("this thread's own waiting commit queue is not given way to: it cannot take the lock while this thread writes", async () => {
    const { units, batch, stamps, now } = unitsBatch();
    writerGate.arrive();
    try {
      expect(writerGate.yieldRequested()).toBe(false);
      await sqliteBackend(ctx.database.sqlite).store(units, now).commitBatch(batch);
      expect(stamps).toHaveLength(1);
    } finally {
      writerGate.leave();
    }
    Atomics.store(otherThread, 0, 1);
    expect(writerGate.yieldRequested()).toBe(true);
  });
});
