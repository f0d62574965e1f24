import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/open.js';
import { inPgTransaction, openPostgres, type PgDatabase } from '../../src/db/pg.js';
import { commitPgTransaction, openFeedTransaction } from '../../src/db/pgChanges.js';
import { stateChangedPg } from '../../src/operations/pgRows.js';
import { PgOperationsStore } from '../../src/operations/pgStore.js';
import { pgDeliveriesSink } from '../../src/subscribers/pgEnqueue.js';
import { PgDeliveriesStore } from '../../src/subscribers/pgStore.js';
import type { DeliveryStep } from '../../src/subscribers/queries.js';
import { type DeliveriesStore, SqliteDeliveriesStore } from '../../src/subscribers/storeSeam.js';
import type { Subscriber } from '../../src/subscribers/subscribers.js';
import { tempDir } from '../helpers/context.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { type DeliveriesHarness, postgresDeliveries, sqliteDeliveries } from './deliveriesStores.js';

/**
 * The deliveries store seam, the same cases on SQLite (a temp file) and PostgreSQL: a claim takes
 * the unbroken run from the subscriber's head and nothing behind a row another owner holds, a
 * run's settle records every outcome and hands back the rest, and the releases hand back exactly
 * whose rows they say. Then, on PostgreSQL only, eight claimers on one subscriber.
 */

const T0 = '2026-03-01T12:00:00.000Z';
const T1 = '2026-03-01T12:01:00.000Z';
const LEASE = '2026-03-01T12:30:00.000Z';
const AFTER_LEASE = '2026-03-01T12:31:00.000Z';
const LATER = '2026-03-01T13:00:00.000Z';

const pg = useTestPgDatabase();
const ids = (rows: ReadonlyArray<{ id: number }>) => rows.map((r) => r.id);

describe.each(['sqlite', 'postgres'] as const)('deliveries store seam on %s', (dialect) => {
  let h: DeliveriesHarness;
  let store: DeliveriesStore;
  beforeEach(async () => {
    if (dialect === 'sqlite') {
      const { dir, cleanup } = tempDir();
      const database = openDatabase(path.join(dir, 'subs.db'));
      h = sqliteDeliveries(database.sqlite);
      store = new SqliteDeliveriesStore(database.sqlite);
      return () => {
        database.close();
        cleanup();
      };
    }
    h = postgresDeliveries(pg.db.pool);
    await h.reset();
    store = new PgDeliveriesStore(pg.db.pool);
    return undefined;
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
    expect(await store.release({ id: 1, owner: 'one', now: AFTER_LEASE })).toBe(false);
    expect(await h.rows()).toEqual([{ id: 1, state: 'sending', attempts: 2, owner: 'two' }]);
    expect(await store.release({ id: 1, owner: 'two', now: AFTER_LEASE })).toBe(true);
    expect(await h.rows()).toEqual([{ id: 1, state: 'pending', attempts: 1, owner: null }]);
  });

  it('releaseOwner hands back that owner’s rows only; releaseAll every claim', async () => {
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
    expect(await store.releaseAll(T1)).toBe(2);
    expect((await h.rows()).map((r) => r.state)).toEqual(['pending', 'pending', 'pending']);
    expect(await store.nextDue('a')).toBe(T0);
    expect(await store.nextDue('nobody')).toBeNull();
  });
});

describe('deliveries store on PostgreSQL, several claimers', () => {
  it('eight claimers on one subscriber: every row claimed once, always the head run, one owner at a time', async () => {
    const h = postgresDeliveries(pg.db.pool);
    await h.reset();
    const total = 300;
    await h.insert(Array.from({ length: total }, () => ({ subscriber: 'a', at: T0 })));
    // Each claimer on a pool of its own, as replicas are.
    const pools: PgDatabase[] = [];
    for (let i = 0; i < 8; i++) pools.push(await openPostgres(pg.database.url, { migrate: false }));
    try {
      const claimed: number[] = [];
      const violations: string[] = [];
      await Promise.all(
        pools.map(async (db, n) => {
          const store = new PgDeliveriesStore(db.pool);
          const owner = `claimer-${n}`;
          for (let idle = 0; idle < 5000 && claimed.length < total; ) {
            const rows = await store.claim({ subscriber: 'a', owner, now: T1, leaseUntil: LEASE, limit: 7 });
            if (rows.length === 0) {
              idle++;
              await new Promise((resolve) => setImmediate(resolve));
              continue;
            }
            // Held by us, so nobody can settle them: the head must be our first row, and no one else sending.
            const check = await db.pool.query<{ head: string; owners: string }>(
              `SELECT min(id) FILTER (WHERE state IN ('pending', 'sending')) AS head,
                      count(DISTINCT lease_owner) FILTER (WHERE state = 'sending') AS owners
               FROM deliveries WHERE subscriber = 'a'`,
            );
            const { head, owners } = check.rows[0]!;
            if (Number(head) !== rows[0]!.id || Number(owners) !== 1)
              violations.push(`${owner} took ${ids(rows)} with head ${head}, ${owners} owners`);
            idle = 0;
            claimed.push(...ids(rows));
            await store.settle({
              subscriber: 'a',
              owner,
              settled: rows.map((r) => ({
                id: r.id,
                now: T1,
                step: { to: 'delivered', status: 200 } as const,
              })),
              unsent: [],
              now: T1,
            });
          }
        }),
      );
      expect(violations).toEqual([]);
      expect(claimed).toEqual(Array.from({ length: total }, (_, i) => i + 1));
      expect(new Set((await h.rows()).map((r) => r.state))).toEqual(new Set(['delivered']));
    } finally {
      await Promise.all(pools.map((db) => db.close()));
    }
  });
});

describe('deliveries writers on PostgreSQL', () => {
  it('ids follow commit order: a newer writer waits for an older one still open, so no claim sees id 2 before id 1', async () => {
    const h = postgresDeliveries(pg.db.pool);
    await pg.db.pool.query('TRUNCATE outbox, outbox_attempts, changes, deliveries RESTART IDENTITY CASCADE');
    const subscribers: Subscriber[] = [
      { key: 'a', url: 'http://127.0.0.1:1/hook', secret: 'whsec_x', events: ['operation.accepted'] },
    ];
    await new PgOperationsStore(pg.db.pool, { leaseOwner: 'writer' }).insert(
      ['old', 'new'].map((ref) => ({
        ref,
        operationType: 'Transfer',
        orderKey: null,
        body: '{}',
        hash: ref,
      })),
      T0,
    );
    const accepted = (ref: string) => [{ ref, from: 'sending' as const, to: 'accepted' as const, at: T0 }];
    const older = await pg.db.pool.connect();
    try {
      await older.query('BEGIN');
      // The older writer stops right after inserting its deliveries, its transaction open.
      let resume: () => void = () => {};
      const gate = new Promise<void>((resolve) => {
        resume = resolve;
      });
      let inserted = false;
      const paused = new Proxy(older, {
        get(target, key) {
          if (key !== 'query') return Reflect.get(target, key);
          return async (...args: Parameters<typeof older.query>) => {
            const result = await (target.query as (...a: unknown[]) => Promise<unknown>)(...args);
            if (String(args[0]).trimStart().startsWith('INSERT INTO deliveries')) {
              inserted = true;
              await gate;
            }
            return result;
          };
        },
      });
      // Opened by hand (inPgTransaction could not pause it): its feed rows go with its commit.
      openFeedTransaction(paused);
      const olderDone = stateChangedPg(paused, pgDeliveriesSink(subscribers), accepted('old'));
      let newerDone = false;
      const newer = inPgTransaction(pg.db.pool, (client) =>
        stateChangedPg(client, pgDeliveriesSink(subscribers), accepted('new')),
      ).then(() => {
        newerDone = true;
      });
      // Until the newer writer waits on the feed's lock (or, were ids not in commit order, commits).
      for (let i = 0; i < 5000 && !newerDone; i++) {
        const { rows } = await pg.db.pool.query<{ n: string }>(
          "SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
        );
        if (inserted && Number(rows[0]!.n) > 0) break;
        await new Promise((resolve) => setImmediate(resolve));
      }
      const store = new PgDeliveriesStore(pg.db.pool);
      expect(
        await store.claim({ subscriber: 'a', owner: 'x', now: T1, leaseUntil: LEASE, limit: 10 }),
      ).toEqual([]);
      resume();
      await olderDone;
      await commitPgTransaction(paused);
      await newer;
      const rows = await store.claim({ subscriber: 'a', owner: 'x', now: T1, leaseUntil: LEASE, limit: 10 });
      expect(rows.map((r) => [r.id, r.ref])).toEqual([
        [1, 'old'],
        [2, 'new'],
      ]);
      expect((await h.rows()).map((r) => r.state)).toEqual(['sending', 'sending']);
    } finally {
      older.release();
    }
  });
});
