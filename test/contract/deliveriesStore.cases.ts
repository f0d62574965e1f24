import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { openDatabase } from '../../src/sqlite/open.js';
import type { ScriptStore } from '../../src/store/script.js';
import { DeliveriesStore } from '../../src/subscribers/deliveriesStore.js';
import { type DeliveryStep, releaseDeliveries } from '../../src/subscribers/queries.js';
import { tempDir } from '../helpers/context.js';
import { type DeliveriesHarness, sqliteDeliveries } from './deliveriesStores.js';

/**
 * The deliveries store seam, the same cases on SQLite (deliveriesStore.sqlite.test.ts) and
 * PostgreSQL (deliveriesStore.pg.test.ts): a claim takes the unbroken run from the subscriber's head
 * and nothing behind a row another owner holds, a run's settle records every outcome and hands back
 * the rest, and the releases hand back exactly whose rows they say.
 */

export const T0 = '2026-03-01T12:00:00.000Z';
export const T1 = '2026-03-01T12:01:00.000Z';
export const LEASE = '2026-03-01T12:30:00.000Z';
const AFTER_LEASE = '2026-03-01T12:31:00.000Z';
const LATER = '2026-03-01T13:00:00.000Z';

export const ids = (rows: ReadonlyArray<{ id: number }>) => rows.map((r) => r.id);

/** One case's store: the seam, the rows behind it, and what ends it. */
export interface DeliveriesUnderTest {
  h: DeliveriesHarness;
  store: DeliveriesStore;
  /** The scripts under it: what the store's owner runs at start-up (releaseDeliveries). */
  scripts: ScriptStore;
  close(): Promise<void>;
}

/** SQLite's: a temp file per case. */
export async function sqliteDeliveriesUnderTest(): Promise<DeliveriesUnderTest> {
  const { dir, cleanup } = tempDir();
  const database = openDatabase(path.join(dir, 'subs.db'));
  return {
    h: sqliteDeliveries(database.sqlite),
    store: new DeliveriesStore(commitQueueFor(database.sqlite)),
    scripts: commitQueueFor(database.sqlite),
    close: async () => {
      database.close();
      cleanup();
    },
  };
}

/** Registers the cases on `dialect`; `open` gives each case an empty store. */
export function deliveriesStoreCases(
  dialect: 'sqlite' | 'postgres',
  open: () => Promise<DeliveriesUnderTest>,
): void {
  describe(`deliveries store seam on ${dialect}`, () => {
    let h: DeliveriesHarness;
    let store: DeliveriesStore;
    let scripts: ScriptStore;
    let close: () => Promise<void>;
    beforeEach(async () => {
      ({ h, store, scripts, close } = await open());
    });
    afterEach(async () => {
      await close();
    });

    const claim = (owner: string, subscriber = 'a', now = T1, limit = 10) =>
      store.claim({ subscriber, owner, now, leaseUntil: LEASE, limit });
    const delivered: DeliveryStep = { to: 'delivered', status: 200 };

    it('claims the head run in id order, stopping at a row not due; another owner gets nothing behind it', async () => {
      await h.insert([
        { subscriber: 'a', at: T0 },
        { subscriber: 'b', at: T0 },
        { subscriber: 'a', at: T0 },
        { subscriber: 'a', at: LATER },
        { subscriber: 'a', at: T0 },
      ]);
      const first = await claim('one');
      expect(first.map((r) => [r.id, r.state, r.attempts, r.lease_owner, r.lease_until])).toEqual([
        [1, 'sending', 1, 'one', LEASE],
        [3, 'sending', 1, 'one', LEASE],
      ]);
      expect(await claim('two')).toEqual([]);
      expect(ids(await claim('two', 'b'))).toEqual([2]);
      await store.settle({
        subscriber: 'a',
        owner: 'one',
        settled: [{ id: 1, now: T1, step: delivered }],
        unsent: [3],
        now: T1,
      });
      expect(await h.rows()).toEqual([
        { id: 1, state: 'delivered', attempts: 1, owner: null },
        { id: 2, state: 'sending', attempts: 1, owner: 'two' },
        { id: 3, state: 'pending', attempts: 0, owner: null },
        { id: 4, state: 'pending', attempts: 0, owner: null },
        { id: 5, state: 'pending', attempts: 0, owner: null },
      ]);
      // Row 4 is not due until LATER: row 5 waits behind it.
      expect(ids(await claim('two'))).toEqual([3]);
      expect(await store.nextDue('a')).toBe(LEASE);
    });

    it('a failed row goes back with its backoff and is then probed alone; a dead one lets the rest go', async () => {
      await h.insert([
        { subscriber: 'a', at: T0 },
        { subscriber: 'a', at: T0 },
        { subscriber: 'a', at: T0 },
      ]);
      await claim('one');
      await store.settle({
        subscriber: 'a',
        owner: 'one',
        settled: [
          { id: 1, now: T1, step: { to: 'pending', nextAttemptAt: LATER, status: 503, error: 'HTTP 503' } },
        ],
        unsent: [2, 3],
        now: T1,
      });
      expect(await store.nextDue('a')).toBe(LATER);
      expect(await claim('one')).toEqual([]);
      const probe = await claim('one', 'a', LATER);
      expect(probe.map((r) => [r.id, r.attempts, r.last_status, r.last_error])).toEqual([
        [1, 2, 503, 'HTTP 503'],
      ]);
      await store.settle({
        subscriber: 'a',
        owner: 'one',
        settled: [{ id: 1, now: LATER, step: { to: 'dead', status: null, error: 'request ECONNREFUSED' } }],
        unsent: [],
        now: LATER,
      });
      const rest = await claim('one', 'a', LATER);
      expect(ids(rest)).toEqual([2, 3]);
      const dead = (await h.rows())[0];
      expect(dead).toEqual({ id: 1, state: 'dead', attempts: 2, owner: null });
    });

    it('one settle records a run of mixed outcomes, each with its own columns, and hands back the rest', async () => {
      await h.insert(Array.from({ length: 5 }, () => ({ subscriber: 'a', at: T0 })));
      expect(ids(await claim('one'))).toEqual([1, 2, 3, 4, 5]);
      await store.settle({
        subscriber: 'a',
        owner: 'one',
        settled: [
          { id: 1, now: T1, step: delivered },
          { id: 2, now: T1, step: { to: 'dead', status: 410, error: 'HTTP 410' } },
          { id: 3, now: LEASE, step: { to: 'delivered', status: 204 } },
          {
            id: 4,
            now: LEASE,
            step: { to: 'pending', nextAttemptAt: LATER, status: null, error: 'timeout' },
          },
        ],
        unsent: [5],
        now: LEASE,
      });
      const settled = { lease_until: null };
      expect(await h.outcomes()).toEqual([
        {
          id: 1,
          state: 'delivered',
          last_status: 200,
          last_error: null,
          next_attempt_at: T0,
          delivered_at: T1,
          dead_at: null,
          ...settled,
        },
        {
          id: 2,
          state: 'dead',
          last_status: 410,
          last_error: 'HTTP 410',
          next_attempt_at: T0,
          delivered_at: null,
          dead_at: T1,
          ...settled,
        },
        {
          id: 3,
          state: 'delivered',
          last_status: 204,
          last_error: null,
          next_attempt_at: T0,
          delivered_at: LEASE,
          dead_at: null,
          ...settled,
        },
        {
          id: 4,
          state: 'pending',
          last_status: null,
          last_error: 'timeout',
          next_attempt_at: LATER,
          delivered_at: null,
          dead_at: null,
          ...settled,
        },
        {
          id: 5,
          state: 'pending',
          last_status: null,
          last_error: null,
          next_attempt_at: T0,
          delivered_at: null,
          dead_at: null,
          ...settled,
        },
      ]);
      expect((await h.rows()).map((r) => [r.attempts, r.owner])).toEqual([
        [1, null],
        [1, null],
        [1, null],
        [1, null],
        [0, null],
      ]);
    });

    it('a lease that ran out is claimed by another owner; the first owner’s late settle is refused', async () => {
      await h.insert([{ subscriber: 'a', at: T0 }]);
      await claim('one');
      expect(await claim('two', 'a', T1)).toEqual([]);
      const taken = await store.claim({
        subscriber: 'a',
        owner: 'two',
        now: AFTER_LEASE,
        leaseUntil: LATER,
        limit: 5,
      });
      expect(taken.map((r) => [r.id, r.attempts, r.lease_owner])).toEqual([[1, 2, 'two']]);
      await store.settle({
        subscriber: 'a',
        owner: 'one',
        settled: [{ id: 1, now: AFTER_LEASE, step: delivered }],
        unsent: [],
        now: AFTER_LEASE,
      });
      const handBack = (owner: string) =>
        store.settle({ subscriber: 'a', owner, settled: [], unsent: [1], now: AFTER_LEASE });
      await handBack('one');
      expect(await h.rows()).toEqual([{ id: 1, state: 'sending', attempts: 2, owner: 'two' }]);
      await handBack('two');
      expect(await h.rows()).toEqual([{ id: 1, state: 'pending', attempts: 1, owner: null }]);
    });

    it('releaseOwner hands back that owner’s rows only; releaseDeliveries every claim', async () => {
      await h.insert([
        { subscriber: 'a', at: T0 },
        { subscriber: 'b', at: T0 },
        { subscriber: 'c', at: T0 },
      ]);
      await claim('dead-one', 'a');
      await claim('dead-one', 'b');
      await claim('alive', 'c');
      expect(await store.releaseOwner('dead-one', T1)).toBe(2);
      expect(await h.rows()).toEqual([
        { id: 1, state: 'pending', attempts: 0, owner: null },
        { id: 2, state: 'pending', attempts: 0, owner: null },
        { id: 3, state: 'sending', attempts: 1, owner: 'alive' },
      ]);
      expect(await store.releaseOwner('dead-one', T1)).toBe(0);
      expect(ids(await claim('heir', 'a'))).toEqual([1]);
      expect(await scripts.transaction(releaseDeliveries(undefined, T1))).toBe(2);
      expect((await h.rows()).map((r) => r.state)).toEqual(['pending', 'pending', 'pending']);
      expect(await store.nextDue('a')).toBe(T0);
      expect(await store.nextDue('nobody')).toBeNull();
    });
  });
}
