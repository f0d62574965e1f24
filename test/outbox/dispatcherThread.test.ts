import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDispatcherThreadComponent } from '../../src/app/dispatcherThread.js';
import type { OperationRow } from '../../src/operations/rows.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { sqliteHostedStore } from '../../src/sqlite/threadStore.js';
import { testContext } from '../helpers/context.js';
import {
  assertNoPersonalData,
  capturingLogger,
  enqueueOperationGrouped,
  tokenization,
  transfer,
  until,
} from './fixtures.js';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ webhook: { policy: 'none' } });
});
afterAll(async () => {
  await sim.close();
});

/**
 * The dispatcher in its worker thread (the daemon's default): its own connection writes the same
 * file while the main thread keeps enqueueing through its group commit. The system clock, as in
 * production: a worker cannot share an injected one.
 */
describe('dispatcher thread', () => {
  it('drains while the API thread enqueues: every row accepted once, counted, logged, handed back clean', async () => {
    const captured = capturingLogger('info');
    const ctx = testContext({
      overrides: {
        'operator.url': sim.url,
        'operator.api_key': 'sim-api-key',
        'operator.rate_per_second': 100_000,
        'outbox.poll_ms': 20,
        'outbox.concurrency': 8,
      },
    });
    ctx.log = captured.log;
    let commits = 0;
    const component = createDispatcherThreadComponent(ctx, {
      store: sqliteHostedStore(ctx.database.sqlite),
      onCommitted: () => commits++,
    });
    const refs: string[] = [];
    const enqueue = (i: number) => {
      const ref = `thread-${i}`;
      refs.push(ref);
      // Personal values in half of them: none may reach a log line, whichever thread writes it.
      const body =
        i % 2 ? transfer(ref, { unitId: 500 + (i % 10) }) : tokenization(ref, { unitId: 500 + (i % 10) });
      return enqueueOperationGrouped(ctx, body, component.wake);
    };
    try {
      // Rows queued before the thread starts, then more while it drains: the main connection's
      // commits meet the worker's write lock and must wait for it, never fail.
      const first = await Promise.all(Array.from({ length: 100 }, (_, i) => enqueue(i)));
      await component.start();
      expect(ctx.database.sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
      const later: ReturnType<typeof enqueue>[] = [];
      for (let i = 100; i < 300; i++) {
        later.push(enqueue(i));
        if (i % 20 === 0) await new Promise((r) => setImmediate(r));
      }
      const results = [...first, ...(await Promise.all(later))];
      expect(results.map((r) => r.status)).toEqual(refs.map(() => 201));
      const states = () =>
        ctx.database.sqlite.prepare('SELECT state, count(*) AS n FROM outbox GROUP BY state').all() as {
          state: string;
          n: number;
        }[];
      await until(`all 300 accepted (now ${JSON.stringify(states())})`, () =>
        states().some((s) => s.state === 'accepted' && s.n === 300),
      );
      await component.stop();

      const rows = ctx.database.sqlite.prepare('SELECT * FROM outbox ORDER BY id').all() as OperationRow[];
      expect(rows.map((r) => r.marketplaceTransactionRef)).toEqual(refs);
      expect(rows.filter((r) => r.state !== 'accepted' || r.lease_owner !== null)).toEqual([]);
      // Delivered once each: no row was claimed twice.
      const sent = sim.notifications.map(
        (n) => (n.body as { marketplaceTransactionRef: string }).marketplaceTransactionRef,
      );
      expect(new Set(sent).size).toBe(300);
      expect(sent.filter((ref) => ref.startsWith('thread-'))).toHaveLength(300);
      // The worker's counters land in the main registry that /metrics serves.
      const counted = (await ctx.metrics.notifyRequests.get()).values.reduce((sum, v) => sum + v.value, 0);
      expect(counted).toBe(300);
      // Its log lines reach the main logger's destination, redacted.
      const events = captured.lines.map((l) => (JSON.parse(l) as { event?: string }).event);
      expect(events.filter((e) => e === 'outbox.accepted')).toHaveLength(300);
      expect(events).toContain('outbox.thread.started');
      assertNoPersonalData(captured.lines);
      expect(commits).toBeGreaterThan(0);
      // The main connection checkpoints again once the thread is gone.
      expect(ctx.database.sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    } finally {
      await component.stop();
      ctx.dispose();
    }
  });

  it('skips wake-ups while sending is paused, and sends what queued meanwhile once a probe succeeds', async () => {
    const ctx = testContext({
      overrides: {
        'operator.url': sim.url,
        'operator.api_key': 'sim-api-key',
        'operator.rate_per_second': 100_000,
        'outbox.poll_ms': 50,
        // Probes soon after the refusal, so the pause ends within the test once the key works.
        'outbox.backoff_base_ms': 50,
      },
    });
    const component = createDispatcherThreadComponent(ctx, { store: sqliteHostedStore(ctx.database.sqlite) });
    const refused = { pathPrefix: '/integration/v1/notify' };
    sim.faults.next(1_000_000, '401', refused);
    const state = (ref: string) =>
      (
        ctx.database.sqlite
          .prepare('SELECT state FROM outbox WHERE "marketplaceTransactionRef" = ?')
          .get(ref) as {
          state: string;
        }
      ).state;
    try {
      await component.start();
      expect(component.sendingPaused()).toBe(false);
      const first = await enqueueOperationGrouped(
        ctx,
        tokenization('paused-0', { unitId: 900 }),
        component.wake,
      );
      expect(first.status).toBe(201);
      await until('the main thread is told sending is paused', () => component.sendingPaused());
      // Queued while paused: no wake-up goes to the worker, and none is needed.
      const later = await Promise.all(
        [1, 2, 3].map((i) =>
          enqueueOperationGrouped(ctx, tokenization(`paused-${i}`, { unitId: 900 + i }), component.wake),
        ),
      );
      expect(later.map((r) => r.status)).toEqual([201, 201, 201]);
      // The worker's probe runs on its own timer (50 ms here), so one may hold a row as 'sending' by
      // now; while the key is refused none is accepted or failed, and the pause holds.
      for (const ref of ['paused-1', 'paused-2', 'paused-3'])
        expect(['queued', 'sending']).toContain(state(ref));
      expect(component.sendingPaused()).toBe(true);
      sim.faults.clear();
      // The worker's own probe finds the key works: everything goes, with no restart and no wake.
      await until('all four accepted after the pause', () =>
        ['paused-0', 'paused-1', 'paused-2', 'paused-3'].every((ref) => state(ref) === 'accepted'),
      );
      await until('the main thread is told sending runs again', () => !component.sendingPaused());
    } finally {
      sim.faults.clear();
      await component.stop();
      ctx.dispose();
    }
  });
});
