import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runDeliveriesCommand } from '../../src/commands/deliveries.js';
import { isoAt, ManualClock } from '../../src/common/clock.js';
import { createDispatcherComponent } from '../../src/outbox/dispatcher.js';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { DeliveriesStore } from '../../src/subscribers/deliveriesStore.js';
import { deliveriesHousekeeping } from '../../src/subscribers/housekeeping.js';
import { deliveriesPrune } from '../../src/subscribers/prune.js';
import { capturingLogger, sqliteDispatcher, until } from '../outbox/fixtures.js';
import { SUB_SECRET, subscriberContext } from './harness.js';

/**
 * Issue 25, item 9, wired as the daemon runs it: the outbox dispatcher's hourly housekeeping prunes
 * deliveries past `subscriber_delivery.retention_days` (on the dispatcher's clock, injected here and
 * moved instead of waited for), and names a renamed subscriber whose rows nothing sends any more.
 */

const START = Date.parse('2026-06-01T00:00:00.000Z');
const DAY = 86_400_000;
const RETENTION_DAYS = 7;

let ctx: ReturnType<typeof subscriberContext>;
let clock: ManualClock;
let captured: ReturnType<typeof capturingLogger>;
beforeEach(() => {
  clock = new ManualClock(START);
  // Renamed: its deliveries were written as "risk-old"; the config now calls it "risk".
  ctx = subscriberContext([{ name: 'risk', url: 'http://127.0.0.1:9/hooks', secret: SUB_SECRET }], {
    clock,
    overrides: { 'outbox.poll_ms': 10, 'subscriber_delivery.retention_days': RETENTION_DAYS },
  });
  captured = capturingLogger('info');
  ctx.log = captured.log;
});
afterEach(() => ctx.dispose());

let serial = 0;
function insert(subscriber: string, state: string, createdMs: number, endedMs?: number): void {
  const created = isoAt(createdMs);
  const ended = endedMs === undefined ? null : isoAt(endedMs);
  ctx.database.sqlite
    .prepare(
      `INSERT INTO deliveries (subscriber, event_type, ref, webhook_id, body, state, attempts, next_attempt_at,
         created_at, updated_at, delivered_at, dead_at)
       VALUES (?, 'operation.approved', 'ref', ?, '{}', ?, 1, ?, ?, ?, ?, ?)`,
    )
    .run(
      subscriber,
      `msg_retention_${++serial}`,
      state,
      created,
      created,
      created,
      state === 'delivered' ? ended : null,
      state === 'dead' ? ended : null,
    );
}

const left = () =>
  ctx.database.sqlite.prepare('SELECT subscriber, state FROM deliveries ORDER BY id').all() as Array<{
    subscriber: string;
    state: string;
  }>;
const events = (name: string) =>
  captured.lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => e.event === name);

describe('the dispatcher prunes deliveries hourly, with the scrub', () => {
  it('deletes what is past the retention, names the renamed subscriber, and its rows go in their turn', async () => {
    insert('risk', 'delivered', START - 10 * DAY, START - 9 * DAY);
    insert('risk', 'dead', START - 9 * DAY, START - 8 * DAY);
    insert('risk-old', 'pending', START - 8 * DAY);
    insert('risk-old', 'pending', START - 2 * DAY);
    insert('risk', 'delivered', START - DAY, START - DAY);

    // As the daemon wires it (daemon.ts, app/dispatcherWorker.ts): the prune runs after the scrub.
    const component = createDispatcherComponent(ctx, {
      ...sqliteDispatcher(ctx),
      housekeeping: deliveriesHousekeeping(
        ctx.config,
        ctx.log,
        deliveriesPrune(commitQueueFor(ctx.database.sqlite)),
      ),
    });
    await component.start();
    try {
      await until('the first housekeeping', () => events('subscribers.pruned').length === 1);
      expect(events('subscribers.pruned')[0]).toMatchObject({ delivered: 1, dead: 1, orphaned: 1 });
      expect(events('subscribers.orphaned')[0]).toMatchObject({
        level: 'warn',
        orphans: [{ subscriber: 'risk-old', unsettled: 1 }],
      });
      expect(left()).toEqual([
        { subscriber: 'risk-old', state: 'pending' },
        { subscriber: 'risk', state: 'delivered' },
      ]);

      // `deliveries list` marks the renamed subscriber's row: nothing sends it.
      const chunks: string[] = [];
      const stdout = new Writable({
        write(chunk, _enc, done) {
          chunks.push(String(chunk));
          done();
        },
      });
      expect(
        await runDeliveriesCommand(
          ctx,
          new DeliveriesStore(commitQueueFor(ctx.database.sqlite)),
          'list',
          undefined,
          {
            json: true,
            stdout,
          },
        ),
      ).toBe(0);
      const listed = (
        JSON.parse(chunks.join('')) as { items: Array<{ subscriber: string; orphaned: boolean }> }
      ).items;
      expect(listed.map((d) => [d.subscriber, d.orphaned])).toEqual([
        ['risk-old', true],
        ['risk', false],
      ]);

      // Not before the hour is up, then on the dispatcher's clock: a week on, the rest is past it.
      clock.advance(RETENTION_DAYS * DAY);
      await until('the next housekeeping', () => events('subscribers.pruned').length === 2);
      expect(events('subscribers.pruned')[1]).toMatchObject({ delivered: 1, dead: 0, orphaned: 1 });
      expect(left()).toEqual([]);
      expect(events('subscribers.orphaned')).toHaveLength(1);
    } finally {
      await component.stop();
    }
  });
});
