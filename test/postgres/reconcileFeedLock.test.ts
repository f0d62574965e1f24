import { describe, expect, it } from 'vitest';
import { FEED_LOCK_KEY, RECONCILE_LOCK_KEY } from '../../src/postgres/advisoryLocks.js';
import { Books, hoursAfter, postgresReconcileStore } from '../contract/reconcileStores.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { until } from '../ops/child.js';

/**
 * The change feed's lock is every writer's (settles, enqueues, webhooks, the mirror, of every
 * replica). A reconciliation pass takes it only for its feed rows, after writing its findings under
 * a lock of its own: taken first, it was held across the pass's round trips, and a drain's settles
 * were sampled waiting behind the findings' upserts (docs/benchmarks.md, issue 30's eighth round).
 */

const pg = useTestPgDatabase();

/** The locks a backend holds or waits for, as `advisory <key> granted|waiting` and `<table> <mode>`. */
async function locksOf(pid: number): Promise<string[]> {
  const { rows } = await pg.db.pool.query<{ lock: string }>(
    `SELECT CASE WHEN l.locktype = 'advisory'
               THEN 'advisory ' || ((l.classid::bigint << 32) | l.objid::bigint)::text
                    || CASE WHEN l.granted THEN ' granted' ELSE ' waiting' END
               ELSE c.relname || ' ' || l.mode END AS lock
     FROM pg_locks l LEFT JOIN pg_class c ON c.oid = l.relation
     WHERE l.pid = $1 AND (l.locktype = 'advisory' OR c.relname = 'reconciliation_findings')`,
    [pid],
  );
  return rows.map((r) => r.lock).sort();
}

describe('a reconciliation pass and the feed lock (PostgreSQL)', () => {
  it("writes its findings under the pass's own lock and waits for the feed's only to append its rows", async () => {
    const books = new Books(await postgresReconcileStore(pg.db));
    for (let i = 0; i < 30; i++)
      await books.report({ ref: `tr-${i}`, type: 'Transfer', issuanceId: `I${i}`, amount: 1 }, hoursAfter(1));
    await books.acceptAll(hoursAfter(1));

    // Another writer holds the feed's lock, stopped on its way to its commit.
    const writer = await pg.db.pool.connect();
    try {
      await writer.query('BEGIN');
      await writer.query(`SELECT pg_advisory_xact_lock(${FEED_LOCK_KEY})`);
      const pass = books.pass(hoursAfter(2));
      let waiter = 0;
      await until('the pass waiting for the feed lock', async () => {
        const { rows } = await pg.db.pool.query<{ pid: number }>(
          `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
             AND ((classid::bigint << 32) | objid::bigint) = ${FEED_LOCK_KEY}`,
        );
        waiter = rows[0]?.pid ?? 0;
        return waiter !== 0;
      });
      // By then it has upserted its findings (a row lock's table lock on reconciliation_findings)
      // while holding the pass's lock, which other passes wait for instead.
      expect(await locksOf(waiter)).toEqual(
        expect.arrayContaining([
          `advisory ${FEED_LOCK_KEY} waiting`,
          `advisory ${RECONCILE_LOCK_KEY} granted`,
          'reconciliation_findings RowExclusiveLock',
        ]),
      );
      await writer.query('COMMIT');
      const outcome = await pass;
      expect(outcome.opened).toHaveLength(30);
    } finally {
      writer.release();
    }
    // Committed together: the findings, their feed rows and the notices.
    const { rows } = await pg.db.pool.query<{ findings: number; feed: number }>(
      `SELECT (SELECT count(*)::int FROM reconciliation_findings WHERE resolved_at IS NULL) AS findings,
              (SELECT count(*)::int FROM changes WHERE resource = 'reconciliation_findings') AS feed`,
    );
    expect(rows[0]).toEqual({ findings: 30, feed: 30 });
    expect(books.sunk).toHaveLength(30);
  });
});
