import pg from 'pg';
import type { ChangeRow } from '../store/script.js';
import { FEED_LOCK_KEY } from './advisoryLocks.js';

/**
 * The one writer of the `changes` feed on PostgreSQL (SQLite's is ./changes.ts). Call it in the
 * transaction that makes the change (an {@link inPgTransaction} of ./pg.ts): the rows wait there and
 * are appended AS THE TRANSACTION COMMITS, in the message that carries its COMMIT.
 *
 * Why a lock: with several writers (replicas, or the mirror and the dispatcher of one), a sequence
 * hands out `seq` at insert time but transactions commit in any order, so a reader that has seen
 * seq 11 could later find seq 10 appear and never read it. Taking one lock before the insert makes
 * the feed single-writer: whoever takes `seq` next commits next, so `seq` order is commit order and
 * a reader at `seq > n` never skips a row. The lock is held from the insert to the end of the
 * commit.
 *
 * Why at the commit, in one message: the lock is every writer's (enqueues, settles, claims, webhooks,
 * the mirror, of every replica). Appended by a statement of its own, it was held while the answer
 * travelled back to the client and the client's event loop got round to sending COMMIT: on a loaded
 * host milliseconds per writer, every other writer queued behind (sampled: ten backends waiting on
 * it through a 2,000-operation drain, enqueues at 109 a second with 16 clients). Sent as
 * `append; COMMIT` in one simple-protocol message, the server runs both back to back: the lock is
 * held for the insert and the commit alone. A simple-protocol message has no bind parameters, so
 * the rows travel as one JSON literal (escaped by pg's escapeLiteral).
 *
 * The wake-up goes with the commit: `pg_notify` inside a transaction is delivered when it commits
 * (and never if it rolls back), to every replica's `LISTEN vcu_sync_changes`, with the last seq.
 */

/** The LISTEN/NOTIFY channel woken after each commit that appended to the feed. */
export const FEED_CHANNEL = 'vcu_sync_changes';

/** The feed rows of each open transaction, appended at its commit (see {@link commitPgTransaction}). */
const pending = new WeakMap<pg.ClientBase, ChangeRow[]>();

/**
 * The feed's append as ONE statement (lock, insert, wake-up), the rows a JSON array literal. The
 * lock is the insert's filter (evaluated once, before the first row reaches the insert and draws
 * its `seq`), and it is held until commit.
 */
function appendSql(rows: readonly ChangeRow[]): string {
  const json = JSON.stringify(rows.map((r) => [r.resource, r.recordId, r.kind, r.at]));
  const literal = pg.escapeLiteral(json);
  return `
  WITH appended AS (
    INSERT INTO changes (resource, record_id, kind, at)
    SELECT r.v->>0, r.v->>1, r.v->>2, (r.v->>3)::timestamptz
    FROM jsonb_array_elements(${literal}::jsonb) WITH ORDINALITY AS r(v, n)
    WHERE (SELECT pg_advisory_xact_lock(${FEED_LOCK_KEY})) IS NOT NULL
    ORDER BY r.n
    RETURNING seq)
  SELECT max(seq)::text AS last, pg_notify('${FEED_CHANNEL}', max(seq)::text) FROM appended`;
}

/** Marks `client`'s transaction as one whose feed rows wait for its commit (inPgTransaction does). */
export function openFeedTransaction(client: pg.ClientBase): void {
  pending.set(client, []);
}

/** Forgets a rolled-back transaction's feed rows. */
export function dropFeedTransaction(client: pg.ClientBase): void {
  pending.delete(client);
}

/**
 * Adds the rows to the feed, in order, when the transaction commits. Throws when `client` is not
 * in an inPgTransaction: rows nobody would commit must not be dropped silently.
 */
export function recordChangesPg(client: pg.ClientBase, rows: ReadonlyArray<ChangeRow>): void {
  const waiting = pending.get(client);
  if (!waiting) throw new Error('recordChangesPg: the client is not in an inPgTransaction');
  waiting.push(...rows);
}

/**
 * Commits `client`'s transaction, its feed rows appended in the same message (or a plain COMMIT
 * when it has none); returns the last seq appended (0 when none).
 */
export async function commitPgTransaction(client: pg.ClientBase): Promise<number> {
  const rows = pending.get(client) ?? [];
  pending.delete(client);
  if (rows.length === 0) {
    await client.query('COMMIT');
    return 0;
  }
  // Two statements in one simple query: node-pg answers with one result per statement.
  const results = (await client.query(`${appendSql(rows)};\nCOMMIT`)) as unknown as Array<
    pg.QueryResult<{ last: string }>
  >;
  return Number(results[0]?.rows[0]?.last);
}
