import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { claimAheadRows } from '../../src/outbox/claimAhead.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { capturingLogger, enqueueOperation, tokenization } from './fixtures.js';
import { dispatchContext, driveUntil, expectUnitOrder, rows } from './harness.js';

/**
 * The SQLite dispatcher as the daemon wires it (app/sqliteDaemon.ts, app/dispatcherWorker.ts): it
 * claims ahead of its free slots (outbox/claimAhead.ts) while its claims and settles commit in spaced
 * groups (sqlite/dispatcherBatches.ts). Per-unit order, one send per operation, and a stop handing
 * every row held ahead back unsent, against the simulator over loopback.
 */

const NOTIFY = '/integration/v1/notify';
const captured = capturingLogger();
let sim: Simulator;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  sim = await startSimulator({ webhook: { policy: 'none' } });
});
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
  sim.faults.clear();
});
afterAll(() => sim.close());

/** A dispatcher with `concurrency` slots claiming ahead as the daemon does (or `ahead` rows). */
function daemonDispatcher(
  concurrency: number,
  ahead?: number,
  stopGraceMs = 5_000,
  more: Record<string, unknown> = {},
) {
  const overrides = {
    'operator.timeout_ms': 10_000,
    'outbox.lease_seconds': 60,
    'outbox.concurrency': concurrency,
    ...more,
  };
  const claimAhead = (c: number) => ahead ?? claimAheadRows({ outbox: { concurrency: c } });
  const h = dispatchContext(sim, captured.log, overrides, {
    owner: 'sqlite-ahead',
    claimAhead: claimAhead(concurrency),
    stopGraceMs,
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await h.component.stop();
    h.ctx.operator().close();
  };
  cleanups.push(async () => {
    await stop();
    h.ctx.dispose();
  });
  return { ...h, stop };
}

/** Polls until `check` holds; real time bounds it only as a safety net. */
async function until(what: string, check: () => boolean): Promise<void> {
  const deadline = Date.now() + 45_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('the SQLite dispatcher claiming ahead, its groups spaced', () => {
  it('delivers every operation once, in order per unit, and leaves no claim', async () => {
    const d = daemonDispatcher(4);
    const queued = Array.from({ length: 160 }, (_, i) => ({ ref: `sq-ahead-${i}`, unit: 7_000 + (i % 8) }));
    for (const q of queued)
      expect(enqueueOperation(d.ctx, tokenization(q.ref, { unitId: q.unit })).status).toBe(201);
    // Answers slow enough that rows wait ahead while others are in flight.
    sim.faults.next(40, 'latency', { latencyMs: 15, pathPrefix: NOTIFY });
    await d.component.start();
    await until('all accepted', () => rows(d.ctx).every((r) => r.state === 'accepted'));
    await d.stop();
    expectUnitOrder(sim.notifications, queued);
    const sent = sim.notifications.filter((n) => n.ref?.startsWith('sq-ahead-'));
    expect(sent).toHaveLength(queued.length);
    expect(rows(d.ctx).every((r) => r.lease_owner === null && r.attempts === 1)).toBe(true);
  });

  it("through the operator's 500, 502, 503, 429 (Retry-After), resets and slow answers: every operation accepted, in order per unit, no lease left", async () => {
    // Leases long enough that moving the clock on for the retries never expires a claim.
    const d = daemonDispatcher(4, undefined, 5_000, {
      'outbox.lease_seconds': 86_400,
      'operator.timeout_ms': 1_000,
    });
    const queued = Array.from({ length: 60 }, (_, i) => ({ ref: `sq-bad-${i}`, unit: 7_200 + (i % 6) }));
    for (const q of queued)
      expect(enqueueOperation(d.ctx, tokenization(q.ref, { unitId: q.unit })).status).toBe(201);
    for (const kind of ['500', '502', '503', 'reset'] as const)
      sim.faults.next(3, kind, { pathPrefix: NOTIFY });
    sim.faults.next(3, '429', { pathPrefix: NOTIFY, retryAfterSec: 1 });
    sim.faults.next(6, 'latency', { latencyMs: 40, pathPrefix: NOTIFY });
    await d.component.start();
    // Backoffs and Retry-After wait on the manual clock: it moves on until every row is accepted.
    await driveUntil('all accepted', d.clock, d.dispatcher, () =>
      rows(d.ctx).every((r) => r.state === 'accepted'),
    );
    await d.stop();
    expect(sim.faults.pending()).toEqual([]);
    // A retried operation arrives again before the next of its unit, never after it.
    expectUnitOrder(sim.notifications, queued);
    expect(rows(d.ctx).filter((r) => r.lease_owner !== null)).toEqual([]);
    // Each refusal and reset cost its row exactly one more attempt: 15 faults, 15 attempts more.
    const attempts = rows(d.ctx).reduce((n, r) => n + r.attempts, 0);
    expect(attempts).toBe(queued.length + 15);
  });

  it('holds rows beyond its slots, leased, and hands them back unsent at a stop', async () => {
    const d = daemonDispatcher(1, 3, 50);
    for (let i = 0; i < 8; i++)
      expect(enqueueOperation(d.ctx, tokenization(`sq-held-${i}`, { unitId: 7_100 + i })).status).toBe(201);
    // The one slot's request hangs: what else is claimed waits ahead.
    sim.faults.next(1, 'latency', { latencyMs: 8_000, pathPrefix: NOTIFY });
    await d.component.start();
    const sending = () =>
      rows(d.ctx).filter((r) => r.state === 'sending' && r.lease_owner === 'sqlite-ahead');
    // One in flight and three ahead, no more: what is held ahead is bounded.
    await until('four claimed', () => sending().length === 4);
    expect(rows(d.ctx).filter((r) => r.state === 'queued')).toHaveLength(4);
    await d.stop();
    const end = rows(d.ctx).map((r) => ({
      ref: r.marketplaceTransactionRef,
      state: r.state,
      owner: r.lease_owner,
      attempts: r.attempts,
    }));
    const queuedAgain = (i: number) => ({ ref: `sq-held-${i}`, state: 'queued', owner: null, attempts: 0 });
    expect(end).toEqual(Array.from({ length: 8 }, (_, i) => queuedAgain(i)));
    // Only the first row's request ever left: the three held ahead were never sent.
    const sent = sim.notifications.filter((n) => n.ref?.startsWith('sq-held-')).map((n) => n.ref);
    expect(sent).toEqual(['sq-held-0']);
  });
});
