import type pg from 'pg';
import type { ChangeRow } from './changes.js';

/**
 * The one writer of the `changes` feed on PostgreSQL (SQLite's is ./changes.ts). Call it in the
 * transaction that makes the change, and last in it: it takes the feed's transaction advisory lock,
 * which is held until commit.
 *
 * Why a lock: with several writers (replicas, or the mirror and the dispatcher of one), a sequence
 * hands out `seq` at insert time but transactions commit in any order, so a reader that has seen
 * seq 11 could later find seq 10 appear and never read it. Taking one lock before the insert makes
 * the feed single-writer: whoever takes `seq` next commits next, so `seq` order is commit order and
 * a reader at `seq > n` never skips a row. The lock is held only from the insert to the commit,
 * which is why this must be the transaction's last statement.
 *
 * The wake-up goes with the commit: `pg_notify` inside a transaction is delivered when it commits
 * (and never if it rolls back), to every replica's `LISTEN vcu_sync_changes`, with the last seq.
 */

/** Transaction advisory lock key of the feed: "vcuchang" in ASCII. */
export const FEED_LOCK_KEY = '8530790981548027495';

/** The LISTEN/NOTIFY channel woken after each commit that appended to the feed. */
export const FEED_CHANNEL = 'vcu_sync_changes';

/**
 * The feed's append as ONE statement (lock, insert, wake-up): three round trips were three times a
 * writer's share of the hot path, and the lock was held across the two after the insert. The lock
 * is the insert's filter (evaluated once, before the first row reaches the insert and draws its
 * `seq`), and it is held until commit as before.
 */
const APPEND_SQL = `
  WITH appended AS (
    INSERT INTO changes (resource, record_id, kind, at)
    SELECT resource, record_id, kind, at
    FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) WITH ORDINALITY AS r(resource, record_id, kind, at, n)
    WHERE (SELECT pg_advisory_xact_lock($5)) IS NOT NULL
    ORDER BY n
    RETURNING seq)
  SELECT max(seq)::text AS last, pg_notify($6, max(seq)::text) FROM appended`;

/** Appends the rows to the feed, in order; returns the last seq (0 when there were none). */
export async function recordChangesPg(
  client: pg.ClientBase,
  rows: ReadonlyArray<ChangeRow>,
): Promise<number> {
  if (rows.length === 0) return 0;
  const result = await client.query<{ last: string }>(APPEND_SQL, [
    rows.map((r) => r.resource),
    rows.map((r) => r.recordId),
    rows.map((r) => r.kind),
    rows.map((r) => r.at),
    FEED_LOCK_KEY,
    FEED_CHANNEL,
  ]);
  return Number(result.rows[0]?.last);
}
