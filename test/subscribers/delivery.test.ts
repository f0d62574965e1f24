import { afterEach, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/common/clock.js';
import { createWebhookComponent } from '../../src/inbox/listener.js';
import { createDispatcherComponent } from '../../src/outbox/dispatcher.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { sqliteInboxStore } from '../../src/sqlite/inboxStore.js';
import { DeliveriesStore } from '../../src/subscribers/deliveriesStore.js';
import { createSubscriberComponent } from '../../src/subscribers/dispatcher.js';
import { cliArgs, runNode } from '../helpers/cli.js';
import { SECRET } from '../inbox/helpers.js';
import { enqueueOperation, PERSONAL, sqliteDispatcher, transfer } from '../outbox/fixtures.js';
import {
  deliveryRows,
  OTHER_SECRET,
  SUB_SECRET,
  subscriberContext,
  TestSubscriber,
  until,
} from './harness.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The simulator as the operator, the webhook listener, both dispatchers, and the subscribers. */
async function pipeline(
  subs: Parameters<typeof subscriberContext>[0],
  policy: 'approve' | 'reject' | 'alternate',
  clock?: Clock,
  overrides: Record<string, unknown> = {},
) {
  const sim: Simulator = await startSimulator({ webhook: { secret: SECRET, delayMs: 0, policy } });
  cleanups.push(() => sim.close());
  const ctx = subscriberContext(subs, {
    overrides: {
      'webhook.secrets': [SECRET],
      'webhook.listen': '127.0.0.1:0',
      'operator.url': sim.url,
      'operator.api_key': 'sim-api-key',
      'operator.rate_per_second': 10_000,
      'outbox.poll_ms': 10,
      'subscriber_delivery.poll_ms': 10,
      ...overrides,
    },
  });
  cleanups.push(() => ctx.dispose());
  const listener = createWebhookComponent(ctx, {
    store: sqliteInboxStore(ctx.database.sqlite),
  });
  await listener.start();
  cleanups.push(() => listener.stop());
  sim.webhooks.configure({ url: listener.address()!.url });
  const outbox = createDispatcherComponent(ctx, sqliteDispatcher(ctx));
  await outbox.start();
  cleanups.push(() => outbox.stop());
  const subscribers = createSubscriberComponent(ctx, {
    store: new DeliveriesStore(commitQueueFor(ctx.database.sqlite)),
    ...(clock ? { clock } : {}),
  });
  await subscribers.start();
  cleanups.push(() => subscribers.stop());
  return { sim, ctx, outbox, subscribers };
}

async function subscriber(secret = SUB_SECRET): Promise<TestSubscriber> {
  const s = new TestSubscriber(secret);
  await s.up();
  cleanups.push(() => s.down());
  return s;
}

const PERSONAL_VALUES = Object.values(PERSONAL);

/**
 * The subscriber dispatcher's clock: the real time plus an offset the test moves forward, so
 * backoffs run out without waiting while rows written by the rest (on the real clock) stay due.
 */
class SkewClock implements Clock {
  offset = 0;
  now(): number {
    return Date.now() + this.offset;
  }
  advance(ms: number): void {
    this.offset += ms;
  }
}

describe('subscriber webhooks', () => {
  it('pushes each decision, signed (verified with standardwebhooks), only the events asked for, nothing personal', async () => {
    const risk = await subscriber();
    const rejections = await subscriber(OTHER_SECRET);
    const { ctx, sim } = await pipeline(
      [
        { name: 'risk', url: risk.url, secret: SUB_SECRET },
        { url: rejections.url, secret: OTHER_SECRET, events: ['operation.rejected'] },
      ],
      'alternate',
    );
    const refs = ['sub-1', 'sub-2', 'sub-3', 'sub-4'];
    for (const ref of refs) expect(enqueueOperation(ctx, transfer(ref)).status).toBe(201);
    // accepted + a decision per operation to risk; the two rejections to the other one.
    await until(() => risk.events.length === 8 && rejections.events.length === 2, 'all events delivered');
    await sim.webhooksIdle();
    await until(() => deliveryRows(ctx).every((r) => r.state === 'delivered'), 'every row settled');

    expect(risk.received.every((r) => r.verified !== undefined)).toBe(true);
    expect(rejections.received.every((r) => r.verified !== undefined)).toBe(true);
    for (const ref of refs) {
      const types = risk.events.filter((e) => e.data.marketplaceTransactionRef === ref).map((e) => e.type);
      expect(types[0]).toBe('operation.accepted');
      expect(['operation.approved', 'operation.rejected']).toContain(types[1]);
    }
    expect(rejections.events.map((e) => e.type)).toEqual(['operation.rejected', 'operation.rejected']);
    const rejected = rejections.events[0]!;
    expect(Object.keys(rejected)).toEqual(['type', 'timestamp', 'data']);
    expect(Object.keys(rejected.data)).toEqual([
      'marketplaceTransactionRef',
      'operationType',
      'state',
      'reason',
      'at',
    ]);
    expect(rejected.data).toMatchObject({ operationType: 'Transfer', state: 'rejected' });
    // The accepted events carry no reason.
    expect(risk.events.find((e) => e.type === 'operation.accepted')!.data).not.toHaveProperty('reason');
    // webhook-id: one per delivery, never shared between two events.
    const ids = risk.received.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    // Nothing personal in any body sent or stored.
    const everything = [
      ...risk.received.map((r) => r.body),
      ...rejections.received.map((r) => r.body),
      ...deliveryRows(ctx).map((r) => JSON.stringify(r)),
    ].join('\n');
    for (const value of PERSONAL_VALUES) expect(everything).not.toContain(value);
    expect(everything).not.toContain(SUB_SECRET);
  });

  it('a subscriber down during three decisions gets all three, in order, when it returns; another is not held up', async () => {
    const down = await subscriber();
    const healthy = await subscriber(OTHER_SECRET);
    await down.down();
    const clock = new SkewClock();
    const { ctx, sim } = await pipeline(
      [
        {
          name: 'down',
          url: down.url,
          secret: SUB_SECRET,
          events: ['operation.approved', 'operation.rejected'],
        },
        { name: 'healthy', url: healthy.url, secret: OTHER_SECRET, events: ['operation.approved'] },
      ],
      'approve',
      clock,
    );
    const refs = ['down-1', 'down-2', 'down-3'];
    for (const ref of refs) {
      expect(enqueueOperation(ctx, transfer(ref)).status).toBe(201);
      // One decision at a time, so the order they commit in is known.
      await until(
        () => healthy.events.some((e) => e.data.marketplaceTransactionRef === ref),
        `${ref} decided`,
      );
    }
    await sim.webhooksIdle();
    // The healthy subscriber got all three while the other was down.
    expect(healthy.events.map((e) => e.data.marketplaceTransactionRef)).toEqual(refs);
    // The down one's head row was tried (and retried, time moved on), the later ones never ahead of it.
    await until(
      () => Number(deliveryRows(ctx).find((r) => r.subscriber === 'down')?.attempts) >= 3,
      'head row retried',
      () => clock.advance(60_000),
    );
    // Time stands still now: the head waits out its backoff, nothing is in flight.
    const downRows = () => deliveryRows(ctx).filter((r) => r.subscriber === 'down');
    await until(() => downRows().every((r) => r.state === 'pending'), 'the lane idle');
    const waiting = downRows();
    expect(waiting.slice(1).map((r) => r.attempts)).toEqual([0, 0]);
    expect(waiting[0]!.last_error).toMatch(/ECONNREFUSED/);

    await down.up();
    await until(
      () => down.events.length === 3,
      'three events after the subscriber returned',
      () => clock.advance(60_000),
    );
    expect(down.events.map((e) => e.data.marketplaceTransactionRef)).toEqual(refs);
    expect(down.events.map((e) => e.type)).toEqual(Array(3).fill('operation.approved'));
  });

  it('500 forever ends in the dead letter, later events go on, and `vcu-sync deliveries redrive --since` sends it again', async () => {
    const sub = await subscriber();
    sub.status = 500;
    const clock = new SkewClock();
    const { ctx } = await pipeline(
      [{ name: 'flaky', url: sub.url, secret: SUB_SECRET, events: ['operation.approved'] }],
      'approve',
      clock,
      { 'subscriber_delivery.max_attempts': 3 },
    );
    expect(enqueueOperation(ctx, transfer('dead-1')).status).toBe(201);
    await until(
      () => deliveryRows(ctx)[0]?.state === 'dead',
      'dead letter',
      () => clock.advance(60_000),
    );
    const dead = deliveryRows(ctx)[0]!;
    expect(dead).toMatchObject({ attempts: 3, last_status: 500 });
    expect(String(dead.last_error)).toContain('after 3 attempts');
    expect(sub.received.filter((r) => r.id === dead.webhook_id)).toHaveLength(3);

    // A dead row does not hold the subscriber's later events.
    sub.status = 200;
    expect(enqueueOperation(ctx, transfer('dead-2')).status).toBe(201);
    await until(() => sub.events.some((e) => e.data.marketplaceTransactionRef === 'dead-2'), 'later event');

    const list = runNode(
      cliArgs(['deliveries', 'list', '--state', 'dead', '--json', '--config', ctx.configFile]),
      {
        VCU_SYNC_DB: ctx.dbFile,
      },
    );
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout).items.map((i: { id: number }) => i.id)).toEqual([dead.id]);

    const redrive = runNode(
      cliArgs([
        'deliveries',
        'redrive',
        '--since',
        '1h',
        '--subscriber',
        'flaky',
        '--config',
        ctx.configFile,
      ]),
      { VCU_SYNC_DB: ctx.dbFile },
    );
    expect(redrive.code, redrive.stderr).toBe(0);
    expect(JSON.parse(redrive.stdout)).toMatchObject({ redriven: 1, ids: [dead.id] });
    await until(() => deliveryRows(ctx).every((r) => r.state === 'delivered'), 'redriven delivery');
    // Same webhook-id as the failed attempts: the subscriber can tell a replay.
    const lastTry = sub.received.filter((r) => r.id === dead.webhook_id).at(-1)!;
    expect(lastTry.verified).toBeDefined();
    expect(JSON.parse(lastTry.body).data.marketplaceTransactionRef).toBe('dead-1');
  });
});
