import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isoAt } from '../../src/common/clock.js';
import { type DeliveriesPrune, PRUNE_BATCH } from '../../src/subscribers/prune.js';

/**
 * Issue 25, item 9: deliveries do not grow without end, the same cases on SQLite
 * (deliveriesPrune.sqlite.test.ts) and PostgreSQL (deliveriesPrune.pg.test.ts), through the outbox
 * prune the dispatcher's hourly housekeeping runs. Rows are written backdated instead of waiting:
 * delivered and dead rows go `retention_days` after they ended, a removed subscriber's pending rows
 * that long after they were written; nothing else goes.
 */

const NOW = Date.parse('2026-06-01T00:00:00.000Z');
const RETENTION_DAYS = 30;
const daysAgo = (d: number) => isoAt(NOW - d * 86_400_000);

/** A row as written for the test: its state, and when it was written and ended. */
export interface Row {
  subscriber: string;
  state: 'pending' | 'sending' | 'delivered' | 'dead';
  created: string;
  ended?: string;
}

export interface PruneHarness {
  insert(rows: readonly Row[]): Promise<void>;
  /** Every row left, in id order: its subscriber and state. */
  left(): Promise<Array<{ subscriber: string; state: string }>>;
  /** Runs one statement on the store. */
  exec(sql: string): Promise<void>;
}

let serial = 0;
export const columns = (r: Row) => [
  r.subscriber,
  `msg_prune_${process.pid}_${++serial}`,
  r.state,
  r.created,
  r.state === 'delivered' ? (r.ended ?? null) : null,
  r.state === 'dead' ? (r.ended ?? null) : null,
  r.state === 'sending' ? 'someone' : null,
];

/** One case's store: its rows, the dialect's prune, and what ends it. */
export interface PruneUnderTest {
  h: PruneHarness;
  pruneDeliveries: DeliveriesPrune;
  close(): Promise<void>;
}

/** Registers the cases on `dialect`; `open` gives each case an empty store. */
export function deliveriesPruneCases(
  dialect: 'sqlite' | 'postgres',
  open: () => Promise<PruneUnderTest>,
): void {
  describe(`deliveries pruned after their retention on ${dialect}`, () => {
    let h: PruneHarness;
    let pruneDeliveries: DeliveriesPrune;
    let close: () => Promise<void>;
    beforeEach(async () => {
      ({ h, pruneDeliveries, close } = await open());
    });
    afterEach(async () => {
      await close();
    });

    const prune = (configured: readonly string[] = ['risk']) =>
      pruneDeliveries(NOW, RETENTION_DAYS, configured);

    it('deletes what ended before the retention, keeps what ended since and everything unsettled', async () => {
      await h.insert([
        { subscriber: 'risk', state: 'delivered', created: daysAgo(41), ended: daysAgo(40) },
        // Written long ago but delivered lately (after an outage): counted from its delivery.
        { subscriber: 'risk', state: 'delivered', created: daysAgo(40), ended: daysAgo(10) },
        { subscriber: 'risk', state: 'dead', created: daysAgo(34), ended: daysAgo(31) },
        { subscriber: 'risk', state: 'dead', created: daysAgo(33), ended: daysAgo(29) },
        // A configured subscriber's unsent rows wait for their dispatcher, however old.
        { subscriber: 'risk', state: 'pending', created: daysAgo(32) },
        { subscriber: 'risk', state: 'sending', created: daysAgo(32) },
        // A subscriber renamed away: its pending rows go after the retention too, the recent one stays.
        { subscriber: 'old-name', state: 'pending', created: daysAgo(31) },
        { subscriber: 'old-name', state: 'delivered', created: daysAgo(36), ended: daysAgo(35) },
        { subscriber: 'old-name', state: 'pending', created: daysAgo(5) },
        { subscriber: 'risk', state: 'delivered', created: daysAgo(1), ended: daysAgo(1) },
      ]);
      const result = await prune();
      expect(result).toEqual({
        delivered: 2,
        dead: 1,
        orphaned: 1,
        orphans: [{ subscriber: 'old-name', unsettled: 1 }],
      });
      expect(await h.left()).toEqual([
        { subscriber: 'risk', state: 'delivered' },
        { subscriber: 'risk', state: 'dead' },
        { subscriber: 'risk', state: 'pending' },
        { subscriber: 'risk', state: 'sending' },
        { subscriber: 'old-name', state: 'pending' },
        { subscriber: 'risk', state: 'delivered' },
      ]);
      // Nothing more to do: a second run deletes nothing and still names the orphan.
      expect(await prune()).toEqual({
        delivered: 0,
        dead: 0,
        orphaned: 0,
        orphans: [{ subscriber: 'old-name', unsettled: 1 }],
      });
      // The subscriber given its old name back: its rows are its own again, no orphan.
      expect((await prune(['risk', 'old-name'])).orphans).toEqual([]);
    });

    it(`works through a backlog in batches of ${PRUNE_BATCH}, past batches where nothing goes`, async () => {
      const kept = PRUNE_BATCH + 20;
      const old = 2 * PRUNE_BATCH + 50;
      await h.insert([
        // A whole batch and more of old rows that stay: the walk must go on behind them.
        ...Array.from(
          { length: kept },
          (): Row => ({ subscriber: 'risk', state: 'pending', created: daysAgo(60) }),
        ),
        ...Array.from(
          { length: old },
          (_, i): Row => ({
            subscriber: 'risk',
            state: i % 2 ? 'delivered' : 'dead',
            created: daysAgo(50),
            ended: daysAgo(45),
          }),
        ),
        ...Array.from(
          { length: 30 },
          (): Row => ({ subscriber: 'risk', state: 'delivered', created: daysAgo(2), ended: daysAgo(2) }),
        ),
      ]);
      const result = await prune();
      expect(result.delivered + result.dead).toBe(old);
      expect(result.dead).toBe(Math.ceil(old / 2));
      const left = await h.left();
      expect(left).toHaveLength(kept + 30);
      expect(left.filter((r) => r.state === 'pending')).toHaveLength(kept);
      expect(await prune()).toEqual({ delivered: 0, dead: 0, orphaned: 0, orphans: [] });
    });

    it('a dead row sent again is no longer dead: it is not pruned with the dead', async () => {
      await h.insert([{ subscriber: 'risk', state: 'dead', created: daysAgo(50), ended: daysAgo(40) }]);
      // Redriven (as `deliveries redrive` does): pending again, its dead_at cleared.
      await h.exec(`UPDATE deliveries SET state = 'pending', dead_at = NULL, redriven_at = created_at`);
      expect(await prune()).toEqual({ delivered: 0, dead: 0, orphaned: 0, orphans: [] });
      expect(await h.left()).toEqual([{ subscriber: 'risk', state: 'pending' }]);
    });
  });
}
