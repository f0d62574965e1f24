import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { createDispatcherComponent } from '../../src/outbox/dispatcher.js';
import type { DispatcherOptions } from '../../src/outbox/dispatcherOptions.js';
import { prepareInsert } from '../../src/outbox/prepareInsert.js';
import { PgOperationsStore, pgOutboxHooks } from '../../src/postgres/operationsStore.js';
import { testContext } from '../helpers/context.js';
import { tokenization } from '../outbox/fixtures.js';
import { expectUnitOrder } from '../outbox/harness.js';
import { usePgOutbox } from './pgOutboxFixture.js';

/**
 * The dispatcher claiming ahead of its free slots (outbox/claimAhead.ts) on the PostgreSQL store,
 * sending to the simulator over loopback: the rows it holds ahead are leased like any claim, per-unit
 * order holds across two replicas doing it, and a stop, a lost liveness lock or a lease run short
 * hands the rows back unsent.
 */

const env = usePgOutbox();

const LEASE_SECONDS = 60;
const TIMEOUT_MS = 10_000;
const NOTIFY = '/integration/v1/notify';

/** A dispatcher claiming `ahead` rows beyond its `concurrency` slots, on a manual clock. */
function aheadDispatcher(
  owner: string,
  concurrency: number,
  ahead: number,
  options: Partial<DispatcherOptions> = {},
  overrides: Record<string, unknown> = {},
) {
  const clock = new ManualClock(Date.parse('2026-03-01T00:00:00.000Z'));
  const ctx = testContext({
    clock,
    overrides: {
      'operator.url': env.sim.url,
      'operator.api_key': 'sim-api-key',
      'operator.rate_per_second': 100_000,
      'operator.timeout_ms': TIMEOUT_MS,
      'outbox.poll_ms': 5,
      'outbox.lease_seconds': LEASE_SECONDS,
      'outbox.concurrency': concurrency,
      ...overrides,
    },
  });
  const store = new PgOperationsStore(env.pgDb.pool);
  const component = createDispatcherComponent(ctx, {
    store,
    hooks: pgOutboxHooks(env.pgDb.pool),
    owner,
    claimAhead: ahead,
    ...options,
  });
  const close = async () => {
    await component.stop();
    ctx.operator().close();
    ctx.dispose();
  };
  return { ctx, clock, store, component, close };
}

/** Queues tokenizations, each on its unit, through the API's validation. */
async function enqueue(ops: ReadonlyArray<{ ref: string; unit: number }>): Promise<void> {
  const ctx = testContext();
  try {
    const store = new PgOperationsStore(env.pgDb.pool);
    await store.insert(
      ops.map(({ ref, unit }) => {
        const prepared = prepareInsert(ctx, tokenization(ref, { unitId: 9000 + unit }));
        if ('errors' in prepared) throw new Error(`invalid fixture: ${JSON.stringify(prepared.errors)}`);
        return prepared;
      }),
      '2026-03-01T00:00:00.000Z',
    );
  } finally {
    ctx.dispose();
  }
}

interface RowView {
  ref: string;
  state: string;
  lease_owner: string | null;
  attempts: number;
}

async function rows(): Promise<RowView[]> {
  return (
    await env.pgDb.pool.query<RowView>(
      `SELECT "marketplaceTransactionRef" AS ref, state, lease_owner, attempts FROM outbox ORDER BY id`,
    )
  ).rows;
}

/** Polls the database until `check` holds; real time bounds it only as a safety net. */
async function until(what: string, check: (r: RowView[]) => boolean): Promise<RowView[]> {
  const deadline = Date.now() + 45_000;
  for (;;) {
    const r = await rows();
    if (check(r)) return r;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(r)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const count = (r: RowView[], state: string, owner?: string) =>
  r.filter((x) => x.state === state && (owner === undefined || x.lease_owner === owner)).length;

describe('claiming ahead on PostgreSQL', () => {
  it('two replicas claiming ahead deliver every operation once, in order per unit, leaving no claim', async () => {
    const total = 240;
    const units = 12;
    const queued = Array.from({ length: total }, (_, index) => ({
      ref: `ahead-${index}`,
      unit: index % units,
      index,
    }));
    await enqueue(queued);
    const a = aheadDispatcher('replica-a', 3, 9);
    const b = aheadDispatcher('replica-b', 3, 9);
    // Answers slow enough that rows wait in both buffers while others are in flight.
    env.sim.faults.next(40, 'latency', { latencyMs: 30, pathPrefix: NOTIFY });
    try {
      await Promise.all([a.component.start(), b.component.start()]);
      await until('all accepted', (r) => count(r, 'accepted') === total);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
    expectUnitOrder(env.sim.notifications, queued);
    const sent = env.sim.notifications.filter((n) => n.ref?.startsWith('ahead-'));
    expect(sent).toHaveLength(total);
    const end = await rows();
    expect(end.every((r) => r.state === 'accepted' && r.lease_owner === null && r.attempts === 1)).toBe(true);
  });

  it('two replicas claiming ahead through 500, 502, 503, 429 and resets: every operation accepted, in order per unit', async () => {
    const total = 60;
    const units = 6;
    const queued = Array.from({ length: total }, (_, index) => ({
      ref: `bad-${index}`,
      unit: index % units,
      index,
    }));
    await enqueue(queued);
    // Leases long enough that moving the clocks on for the retries never expires a claim.
    const long = { 'outbox.lease_seconds': 86_400, 'operator.timeout_ms': 1_000 };
    const a = aheadDispatcher('replica-a', 3, 9, {}, long);
    const b = aheadDispatcher('replica-b', 3, 9, {}, long);
    for (const kind of ['500', '502', '503', 'reset'] as const)
      env.sim.faults.next(3, kind, { pathPrefix: NOTIFY });
    env.sim.faults.next(3, '429', { pathPrefix: NOTIFY, retryAfterSec: 1 });
    try {
      await Promise.all([a.component.start(), b.component.start()]);
      // The retries wait on each replica's manual clock: both move on until every row is accepted.
      const deadline = Date.now() + 45_000;
      while (count(await rows(), 'accepted') < total) {
        if (Date.now() > deadline) throw new Error(`timed out: ${JSON.stringify(await rows())}`);
        for (const d of [a, b]) {
          d.clock.advance(1_000);
          d.component.wake();
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
    expect(env.sim.faults.pending()).toEqual([]);
    // A retried operation arrives again before the next of its unit, never after it.
    expectUnitOrder(env.sim.notifications, queued);
    expect((await rows()).every((r) => r.state === 'accepted' && r.lease_owner === null)).toBe(true);
  });

  it('holds rows beyond its slots, leased, and hands them back unsent at a stop', async () => {
    await enqueue(Array.from({ length: 8 }, (_, i) => ({ ref: `held-${i}`, unit: i })));
    const d = aheadDispatcher('replica-held', 1, 3, { stopGraceMs: 50 });
    // The one slot's request hangs: what else is claimed waits in the buffer.
    env.sim.faults.next(1, 'latency', { latencyMs: 8_000, pathPrefix: NOTIFY });
    try {
      await d.component.start();
      // One in flight and three ahead, no more: the buffer is bounded.
      const held = await until('four claimed', (r) => count(r, 'sending', 'replica-held') === 4);
      expect(count(held, 'queued')).toBe(4);
    } finally {
      await d.close();
    }
    // The stop cancelled the request in flight and released it and the three held ahead.
    expect(await rows()).toEqual(
      Array.from({ length: 8 }, (_, i) => ({
        ref: `held-${i}`,
        state: 'queued',
        lease_owner: null,
        attempts: 0,
      })),
    );
    // Only the first row's request ever left: the three held ahead were never sent.
    const sent = env.sim.notifications.filter((n) => n.ref?.startsWith('held-')).map((n) => n.ref);
    expect(sent).toEqual(['held-0']);
  });

  it('hands its rows held ahead back when it loses its liveness lock, and sends none of them', async () => {
    await enqueue(Array.from({ length: 6 }, (_, i) => ({ ref: `alive-${i}`, unit: i })));
    let alive = true;
    const d = aheadDispatcher('replica-alive', 1, 3, { mayClaim: () => alive });
    env.sim.faults.next(1, 'latency', { latencyMs: 1_500, pathPrefix: NOTIFY });
    try {
      await d.component.start();
      await until('four claimed', (r) => count(r, 'sending', 'replica-alive') === 4);
      alive = false;
      d.component.wake();
      // The held rows go back; the one in flight settles when its answer comes, as ever.
      const after = await until(
        'the held rows released and the one in flight accepted',
        (r) => count(r, 'accepted') === 1 && count(r, 'sending') === 0,
      );
      expect(count(after, 'queued')).toBe(5);
      expect(after.every((r) => r.lease_owner === null)).toBe(true);
    } finally {
      await d.close();
    }
    expect(env.sim.notifications.filter((n) => n.ref?.startsWith('alive-'))).toHaveLength(1);
  });

  it('sends no row held ahead past what its lease covers: it goes back and is claimed afresh', async () => {
    await enqueue(Array.from({ length: 4 }, (_, i) => ({ ref: `stale-${i}`, unit: i })));
    const released: string[] = [];
    class Releasing extends PgOperationsStore {
      override release(...args: Parameters<PgOperationsStore['release']>) {
        released.push(args[0].ref);
        return super.release(...args);
      }
    }
    const store = new Releasing(env.pgDb.pool);
    const d = aheadDispatcher('replica-stale', 1, 3, { store });
    env.sim.faults.next(1, 'latency', { latencyMs: 1_500, pathPrefix: NOTIFY });
    try {
      await d.component.start();
      await until('four claimed', (r) => count(r, 'sending', 'replica-stale') === 4);
      // While the first request hangs the held rows' leases run short: a send now could outlive them.
      d.clock.advance(LEASE_SECONDS * 1000 - 2 * TIMEOUT_MS + 1_000);
      await until('all accepted', (r) => count(r, 'accepted') === 4);
    } finally {
      await d.close();
    }
    // The three held ahead went back rather than out on a lease too short.
    expect(released.sort()).toEqual(['stale-1', 'stale-2', 'stale-3']);
    const attempts = await env.pgDb.pool.query<{ n: string }>('SELECT count(*) AS n FROM outbox_attempts');
    // Each sent once (the released rows' unsent claims were not counted as attempts).
    expect(Number(attempts.rows[0]?.n)).toBe(4);
    expect(env.sim.notifications.filter((n) => n.ref?.startsWith('stale-'))).toHaveLength(4);
    expect((await rows()).map((r) => r.attempts)).toEqual([1, 1, 1, 1]);
  });
});
