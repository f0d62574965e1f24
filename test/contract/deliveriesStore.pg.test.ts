import { describe, expect, it } from 'vitest';
import { stateChanged } from '../../src/operations/stateChanged.js';
import { commitPgTransaction, openFeedTransaction } from '../../src/postgres/changes.js';
import { inPgTransaction, openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { PgOperationsStore } from '../../src/postgres/operationsStore.js';
import { drivePostgres, postgresScriptStore } from '../../src/postgres/scripts.js';
import { DeliveriesStore } from '../../src/subscribers/deliveriesStore.js';
import { deliveriesSink } from '../../src/subscribers/deliverySinks.js';
import type { Subscriber } from '../../src/subscribers/subscribers.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { deliveriesStoreCases, ids, LEASE, T0, T1 } from './deliveriesStore.cases.js';
import { postgresDeliveries } from './deliveriesStores.js';

/**
 * The deliveries store seam's contract on PostgreSQL (the file's database emptied before each case);
 * then what only PostgreSQL has: eight claimers on one subscriber, and writers committing out of order.
 */

const pg = useTestPgDatabase();

deliveriesStoreCases('postgres', async () => {
  const h = postgresDeliveries(pg.db.pool);
  await h.reset();
  const scripts = postgresScriptStore(pg.db.pool);
  return { h, store: new DeliveriesStore(scripts), scripts, close: async () => {} };
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
          const store = new DeliveriesStore(postgresScriptStore(db.pool));
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
    await new PgOperationsStore(pg.db.pool).insert(
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
      const olderDone = drivePostgres(paused, stateChanged(accepted('old'), deliveriesSink(subscribers)));
      let newerDone = false;
      const newer = inPgTransaction(pg.db.pool, (client) =>
        drivePostgres(client, stateChanged(accepted('new'), deliveriesSink(subscribers))),
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
      const store = new DeliveriesStore(postgresScriptStore(pg.db.pool));
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
