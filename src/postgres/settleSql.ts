import type pg from 'pg';
import { eventAppliesSql, OUTBOX_ROW_LOCK } from '../operations/rows.js';
import type { AttemptRecord, Claim, SettleStep } from '../operations/storeSeam.js';
import { ROW_LOCK_TIMEOUT_MS, SETTLE_EVENT, settleSet } from '../operations/transitions.js';
import { join, raw, type Sql, sql } from '../store/sql.js';

/**
 * The statements of the dispatcher's groups on PostgreSQL (settleGroup.ts runs them): the settled
 * rows' lock, the settles over `unnest` arrays, and the claim's pinned plan.
 */

/** Locks rows by id, those nobody else holds (`ids`: a comma-separated list of integers). */
const lockRowsSql = (ids: string) =>
  `SELECT id::float8 AS id FROM outbox WHERE id = ANY('{${ids}}'::int8[]) ORDER BY id ${OUTBOX_ROW_LOCK} SKIP LOCKED`;

/** The transaction-local setting naming the settled rows the group's first message locked. */
const LOCKED_SETTING = 'vcu_sync.settle_locked';

/**
 * {@link lockRowsSql}, the rows it took also named in {@link LOCKED_SETTING} (a comma-separated
 * list; set_config(..., true) lasts to the transaction's end) so the settles sent in the same
 * message move only those ({@link settleMany}); answers the list as `locked`.
 */
export const lockAndNameSql = (ids: string) =>
  `SELECT set_config('${LOCKED_SETTING}', coalesce(string_agg(l.id::text, ','), ''), true) AS locked
  FROM (${lockRowsSql(ids)}) AS l`;

/** The ids {@link lockAndNameSql} answered. */
export const parseLocked = (text: string | undefined): number[] => (text ? text.split(',').map(Number) : []);

/**
 * After {@link lockAndNameSql} took `locked` (in the group's first message): returns every row of `ids` this
 * transaction holds. Rows nobody holds, the usual case, are all in `locked` already. Those held
 * elsewhere are waited for together, up to {@link ROW_LOCK_TIMEOUT_MS} in all, in a savepoint: a
 * timed-out wait (55P03) aborts what it is in, and held rows must not fail the whole group; then
 * those that came free meanwhile are taken and the rest left out. One wait for all, not one per
 * row: a group holds its other rows' locks while it waits, and a transaction that locks many rows
 * in another order (a person's `UPDATE outbox` in psql) waiting on one of them for a second
 * (deadlock_timeout) would find a cycle and be aborted.
 */
export async function lockHeldRows(
  client: pg.ClientBase,
  ids: readonly number[],
  locked: Set<number>,
): Promise<Set<number>> {
  const held = [...new Set(ids)].filter((id) => !locked.has(id)).sort((a, b) => a - b);
  if (held.length === 0) return locked;
  const list = held.map((id) => Math.trunc(id)).join(',');
  await client.query(`SET LOCAL lock_timeout = ${ROW_LOCK_TIMEOUT_MS}`);
  await client.query('SAVEPOINT settle_lock');
  try {
    await client.query(
      `SELECT 1 FROM outbox WHERE id = ANY('{${list}}'::int8[]) ORDER BY id ${OUTBOX_ROW_LOCK}`,
    );
    await client.query('RELEASE SAVEPOINT settle_lock');
    for (const id of held) locked.add(id);
  } catch (err) {
    if ((err as { code?: unknown }).code !== '55P03') throw err;
    await client.query('ROLLBACK TO SAVEPOINT settle_lock');
    const { rows } = await client.query<{ id: number }>(lockRowsSql(list));
    for (const r of rows) locked.add(r.id);
  }
  // The rest of the group (claims, the feed's lock) waits as before: their holders commit at once.
  await client.query('SET LOCAL lock_timeout TO DEFAULT');
  return locked;
}

/**
 * The claim's plan, pinned for its transaction (set_config(..., true) is SET LOCAL): the ordered
 * walk of `(state, id)` that stops after `limit` claimable rows. The planner picks it only when its
 * statistics say many rows are queued, and they rarely do when it matters: a fresh table before
 * autoanalyze, or one whose last ANALYZE saw every row settled, before a burst. Estimating a few
 * queued rows, it read them all (bitmap or `(state, next_attempt_at)` scan), tested every one's
 * NOT EXISTS (itself a bitmap AND over every queued row) and sorted: a claim cost O(queued²), 100-200
 * ms behind 1,000 queued rows of 50 keys, and 2,000 operations over 50 units drained at 24 a second
 * through the daemon. With sorts, bitmaps and sequential scans priced out, the walk is the only
 * plan left (the union's small sort stays, priced out but with nothing cheaper), and JIT, which
 * those prices would otherwise trigger, is off. Set in the BEGIN's message of a group with claims
 * and held to its end: its other statements (the settled rows' lock and settle, the feed's append,
 * subscribers' rows) read by primary or unique keys alone, so their plans are the same under it.
 */
export const CLAIM_PLAN_SQL = `SELECT set_config('enable_sort', 'off', true), set_config('enable_incremental_sort', 'off', true),
  set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true), set_config('jit', 'off', true)`;

/** What a settle's statement reads of a settle waiting in a group (settleGroup.ts's SettleJob). */
export interface SettleValues {
  claim: Claim;
  attempt: AttemptRecord;
  step: SettleStep;
}

/** A settle's values per row, as `unnest` columns: every step's, null where a step has none. */
const SETTLE_COLUMNS: ReadonlyArray<readonly [string, string, (job: SettleValues) => unknown]> = [
  ['id', 'int8', (j) => j.claim.id],
  ['now', 'timestamptz', (j) => j.claim.now],
  ['owner', 'text', (j) => j.claim.owner],
  ['started_at', 'timestamptz', (j) => j.attempt.startedAt],
  ['duration_ms', 'int4', (j) => j.attempt.durationMs],
  ['status_code', 'int4', (j) => j.attempt.statusCode],
  ['error', 'text', (j) => j.attempt.error],
  ['text', 'text', (j) => (j.step.to === 'accepted' ? j.step.response : j.step.error)],
  ['status', 'int4', (j) => j.step.status],
  ['next_attempt_at', 'timestamptz', (j) => (j.step.to === 'queued' ? j.step.nextAttemptAt : null)],
  ['refund', 'int4', (j) => (j.step.to === 'queued' && j.step.refund ? 1 : 0)],
];

const column = (name: string) => raw(`s.${name}`);

/**
 * Settles rows of one step at once, in one statement over `unnest` arrays (PostgreSQL's; SQLite
 * settles row by row, transitions.ts), of those this transaction holds (`lockedOnly`: those the
 * same message's lock took; else all of `jobs`, locked by an earlier message): logs every attempt (whether or not its lease still holds)
 * and moves the rows whose claimant still holds the lease, by the same SET list and guards as one
 * row's settle, each row's guard reading its own claim's time and owner; returns the ids moved.
 */
export function settleMany(to: SettleStep['to'], jobs: readonly SettleValues[], lockedOnly: boolean): Sql {
  const arrays = SETTLE_COLUMNS.map(([, type, value]) => sql`${jobs.map(value)}${raw(`::${type}[]`)}`);
  // Sent with the lock (lockAndNameSql): a row someone else holds is neither logged nor moved here.
  const locked = lockedOnly
    ? raw(` WHERE s.id = ANY(string_to_array(current_setting('${LOCKED_SETTING}'), ',')::int8[])`)
    : raw('');
  const names = raw(SETTLE_COLUMNS.map(([name]) => name).join(', '));
  const values = { now: column('now'), text: column('text'), status: column('status') };
  const set = settleSet(to, { ...values, next: column('next_attempt_at'), refund: column('refund') });
  const guard = eventAppliesSql(SETTLE_EVENT[to], { now: column('now'), owner: column('owner') }, 'outbox.');
  return sql`WITH s AS (SELECT * FROM unnest(${join(arrays, ', ')}) AS s(${names})${locked}),
     attempt AS (
       INSERT INTO outbox_attempts (outbox_id, started_at, duration_ms, status_code, error)
       SELECT id, started_at, duration_ms, status_code, error FROM s)
     UPDATE outbox SET ${set} FROM s WHERE outbox.id = s.id AND ${guard}
     RETURNING outbox.id AS id, ${to === 'accepted' ? EARLY_EVENTS : raw('false')} AS early`;
}

/**
 * Whether a settled row's ref has webhook events stored (decisions that came before it was
 * accepted, for inbox.afterAccepted to mask and apply). Read in the settle's statement, after
 * the BEGIN's message locked the rows ({@link lockRowsSql}: an earlier statement, so this one's
 * snapshot is taken once they are held): every webhook that decides locks its row first
 * (inbox/correlate.ts), so one stored before this transaction's lock is in the statement's snapshot,
 * and one after it waits for the commit and finds the row accepted, applying its decision itself.
 */
const EARLY_EVENTS = raw(`EXISTS (SELECT 1 FROM webhook_events e
       WHERE e."marketplaceTransactionRef" = outbox."marketplaceTransactionRef")`);
