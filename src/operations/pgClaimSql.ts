import { operationColumns, PG_GUARD } from './pgRows.js';
import { eventAppliesSql, guardSql } from './rows.js';
import { fromStates } from './states.js';

/**
 * The PostgreSQL claim's statements (pgStore.ts runs them in its group transactions): the one
 * statement that claims up to $4 rows for owner $2 at $1 with a lease until $3, and the planner
 * settings its transaction begins with.
 */

/**
 * The claim's candidates: one branch per state the claim moves from (the transition table's), each
 * walking the `(state, id)` index in order and locking up to $4 rows, then the $4 oldest of them.
 * One scan in id order with the guards' OR as a filter steps over every settled row before the
 * first queued one, so a claim's cost grew with the outbox's history (3 ms behind 5,000 accepted
 * rows). The state is a range (`BETWEEN s AND s`) and the order `(state, id)` on purpose: with `=`
 * the planner may still walk the primary key, which statistics taken before a burst was settled
 * (every row queued) make look as cheap. A branch's rows that miss the cut stay locked, unclaimed,
 * until this short transaction commits, as a concurrent claimer's own candidates are.
 */
const candidateBranches = fromStates('claim').map(
  ({ from, when }, i) => `from_${i} AS (
    SELECT o.id, o.state AS from_state FROM outbox o
    WHERE o.state BETWEEN '${from}' AND '${from}'${when ? ` AND ${guardSql(when, 'o.', PG_GUARD)}` : ''}
      AND (o.order_key IS NULL OR NOT EXISTS (
        SELECT 1 FROM outbox p
        WHERE p.order_key = o.order_key AND p.id < o.id AND p.state IN ('queued', 'sending')))
    ORDER BY o.state, o.id LIMIT $4
    FOR UPDATE SKIP LOCKED
  )`,
);

export const CLAIM_SQL = `
  WITH ${candidateBranches.join(',\n  ')},
  candidates AS (
    SELECT id, from_state FROM (${candidateBranches.map((_, i) => `SELECT * FROM from_${i}`).join(' UNION ALL ')}) AS b
    ORDER BY id LIMIT $4
  )
  UPDATE outbox SET state = 'sending', lease_owner = $2, lease_until = $3::timestamptz,
    attempts = outbox.attempts + 1, updated_at = $1
  FROM candidates c
  WHERE outbox.id = c.id AND ${eventAppliesSql('claim', 'outbox.', PG_GUARD)}
  RETURNING ${operationColumns('outbox.')}, c.from_state`;

/**
 * The claim's plan, pinned for its transaction (set_config(..., true) is SET LOCAL): the ordered
 * walk of `(state, id)` that stops after $4 claimable rows. The planner picks it only when its
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

/** BEGIN and the claim's plan in one simple-protocol message. */
export const CLAIM_BEGIN_SQL = `BEGIN; ${CLAIM_PLAN_SQL}`;
