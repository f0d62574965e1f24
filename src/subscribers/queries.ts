import type { DeliveryRecord } from '../db/schema/rowTypes.js';
import { all, run, type Script } from '../store/script.js';
import { greatest, join, limitRows, raw, type Sql, sql, typed, valueList, whenShared } from '../store/sql.js';

/**
 * Every statement that moves a `deliveries` row (enqueue.ts inserts them), written once for both
 * stores, and the guard of every move. Run by the one store (deliveriesStore.ts: the lanes' claims
 * and settles, the routes' reads and steering) through a `ScriptStore`. A delivery's life:
 *
 * ```
 * pending ── claim (due, head of its subscriber) ──▶ sending ── 2xx ──▶ delivered
 *    ▲  ▲                                               │ failure: retry ──▶ pending (backoff)
 *    │  └──────────── release (stop, start-up) ─────────┤ failure past max attempts / age
 *    └──── retry / redrive (a person) ◀── dead ◀────────┘
 * ```
 */

/** A delivery exactly as stored (times ISO text, ids numbers, on both stores). */
export type DeliveryRow = DeliveryRecord;

export const DELIVERY_STATES = ['pending', 'sending', 'delivered', 'dead'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** Unsettled: what holds back the rows behind it. */
const UNSETTLED = raw(`state IN ('pending', 'sending')`);
/** Release whoever holds it (a dead claimant). */
const CLAIMED = raw(`state = 'sending'`);

/** May be claimed at `now`: pending and due, or claimed under a lease that ran out ({@link sendableNow} in SQL). */
const claimable = (now: string) =>
  sql`((state = 'pending' AND next_attempt_at <= ${typed(now, 'timestamptz')})
    OR (state = 'sending' AND lease_until < ${typed(now, 'timestamptz')}))`;

/** Settle or release by the claimant: only while it still holds the lease. */
const heldBy = (owner: string) => sql`state = 'sending' AND lease_owner = ${owner}`;

/** Back to pending, the attempt not counted (a release). */
const releasing = (now: string) =>
  sql`state = 'pending', attempts = ${greatest(raw('0'), raw('attempts - 1'))}, updated_at = ${typed(now, 'timestamptz')},
    lease_owner = NULL, lease_until = NULL`;

/** A row at the head of its subscriber, as a claim sees it. */
export interface DeliveryHead {
  state: string;
  next_attempt_at: string;
  lease_until: string | null;
}

/** Whether a head row may be sent at `now` (ISO): pending and due, or claimed under a lease that ran out. Pure. */
export function sendableNow(head: DeliveryHead, now: string): boolean {
  return head.state === 'pending'
    ? head.next_attempt_at <= now
    : head.state === 'sending' && head.lease_until !== null && head.lease_until < now;
}

/**
 * The ids to claim, in order, from the subscriber's head rows as they stand under the claimer's
 * row locks (`head` null for a row it could not lock: another claimer's, so it stops there): the
 * unbroken run that may be sent now, and after a row tried before only that one (a probe of a
 * failing subscriber: the rest wait untouched behind it). Pure.
 */
export function runToClaim(
  heads: ReadonlyArray<{ id: number; attempts: number; head: DeliveryHead | null }>,
  now: string,
): number[] {
  const ids: number[] = [];
  for (const { id, attempts, head } of heads) {
    if (!head || !sendableNow(head, now)) break;
    ids.push(id);
    if (attempts > 0) break;
  }
  return ids;
}

/** What a claim needs. */
export interface DeliveryClaim {
  subscriber: string;
  owner: string;
  now: string;
  leaseUntil: string;
  /** Most rows claimed at once (they are sent one after another, in order). */
  limit: number;
}

interface HeadRow {
  id: number;
  state: string | null;
  attempts: number | null;
  next_attempt_at: string | null;
  lease_until: string | null;
}

/**
 * Claims the subscriber's oldest unsettled rows, in id order, as long as each may be sent now
 * ({@link runToClaim}), leased to `c.owner`. Where replicas share the store, the head's rows are
 * locked FOR UPDATE SKIP LOCKED as they are read: a row another claimer holds comes back without
 * its columns, and the claim stops there; the state is read under the lock (as it stands now, not
 * as the snapshot saw it). Alone on the store (SQLite) the transaction sees no other writer. What
 * a snapshot must not miss is an OLDER row not committed yet: writers take the feed's lock before
 * inserting deliveries (enqueue.ts), so ids are handed out in commit order.
 */
export function* claimDeliveries(c: DeliveryClaim): Script<DeliveryRow[]> {
  const head = yield* all<HeadRow>(sql`
    WITH head AS (
      SELECT id FROM deliveries WHERE subscriber = ${c.subscriber} AND ${UNSETTLED} ORDER BY id ${limitRows(c.limit)}
    ), locked AS MATERIALIZED (
      SELECT id, state, attempts, next_attempt_at, lease_until FROM deliveries
      WHERE id IN (SELECT id FROM head) AND ${UNSETTLED} ${whenShared(sql`FOR UPDATE SKIP LOCKED`)}
    )
    SELECT head.id, locked.state, locked.attempts, locked.next_attempt_at, locked.lease_until
    FROM head LEFT JOIN locked ON locked.id = head.id ORDER BY head.id`);
  const claim = runToClaim(
    head.map((r) => ({
      id: r.id,
      attempts: r.attempts ?? 0,
      head: r.state === null ? null : (r as DeliveryHead),
    })),
    c.now,
  );
  if (claim.length === 0) return [];
  const rows = yield* all<DeliveryRow>(sql`
    UPDATE deliveries SET state = 'sending', attempts = attempts + 1, lease_owner = ${c.owner},
      lease_until = ${typed(c.leaseUntil, 'timestamptz')}, updated_at = ${typed(c.now, 'timestamptz')}
    WHERE id IN (${valueList(claim)}) AND ${claimable(c.now)}
    RETURNING *`);
  return rows.sort((a, b) => a.id - b.id);
}

/** What an attempt's answer moves a claimed row to (see nextStep.ts). */
export type DeliveryStep =
  | { to: 'delivered'; status: number }
  | { to: 'pending'; nextAttemptAt: string; status: number | null; error: string }
  | { to: 'dead'; status: number | null; error: string };

/** One attempt's outcome, to record. */
export interface SettledDelivery {
  id: number;
  /** When it was decided (ISO). */
  now: string;
  step: DeliveryStep;
}

/** One outcome as a row of the settle's VALUES list: id, state, status, error, next attempt, when. */
function outcomeValues({ id, now, step }: SettledDelivery): Sql {
  const error = step.to === 'delivered' ? null : step.error;
  const next = step.to === 'pending' ? step.nextAttemptAt : null;
  return sql`(${typed(id, 'int8')}, ${typed(step.to, 'text')}, ${typed(step.status, 'int4')}, ${typed(error, 'text')},
    ${typed(next, 'timestamptz')}, ${typed(now, 'timestamptz')})`;
}

/**
 * Records a claimant's outcomes and hands back the rows it claimed but did not send (attempt not
 * counted): one statement each, whatever the number of rows. A row `owner` no longer holds is left
 * (another claimant settles it).
 */
export function* settleDeliveries(
  owner: string,
  outcomes: readonly SettledDelivery[],
  unsent: readonly number[],
  now: string,
): Script<void> {
  if (unsent.length > 0)
    yield* run(
      sql`UPDATE deliveries SET ${releasing(now)} WHERE id IN (${valueList(unsent)}) AND ${heldBy(owner)}`,
    );
  if (outcomes.length === 0) return;
  yield* run(sql`
    WITH v(id, st, status, error, next, at) AS (VALUES ${join(outcomes.map(outcomeValues), ', ')})
    UPDATE deliveries SET state = v.st, last_status = v.status, last_error = v.error,
      next_attempt_at = COALESCE(v.next, deliveries.next_attempt_at),
      delivered_at = CASE WHEN v.st = 'delivered' THEN v.at ELSE deliveries.delivered_at END,
      dead_at = CASE WHEN v.st = 'dead' THEN v.at ELSE deliveries.dead_at END,
      updated_at = v.at, lease_owner = NULL, lease_until = NULL
    FROM v WHERE deliveries.id = v.id AND ${heldBy(owner)}`);
}

/**
 * Hands back every claimed row, whoever claimed it (`owner` undefined: only when every claimant is
 * known dead, as the daemon that owns a SQLite file knows at start-up), or every row `owner` holds
 * (a dead replica's). Returns how many went back.
 */
export function* releaseDeliveries(owner: string | undefined, now: string): Script<number> {
  const whose = owner === undefined ? CLAIMED : heldBy(owner);
  return (yield* run(sql`UPDATE deliveries SET ${releasing(now)} WHERE ${whose}`)).rowCount;
}

/** A dead row back to pending (attempts reset), or a pending one made due now; undefined otherwise. */
export function* retryDelivery(id: number, now: string): Script<DeliveryRow | undefined> {
  const at = typed(now, 'timestamptz');
  const [row] = yield* all<DeliveryRow>(sql`
    UPDATE deliveries SET state = 'pending', attempts = CASE WHEN state = 'dead' THEN 0 ELSE attempts END,
      next_attempt_at = ${at}, redriven_at = CASE WHEN state = 'dead' THEN ${at} ELSE redriven_at END,
      dead_at = NULL, updated_at = ${at}
    WHERE id = ${id} AND state IN ('dead', 'pending') RETURNING *`);
  return row;
}

/** Every dead row that died at or after `since` (of one subscriber, if named) back to pending; their ids. */
export function* redriveDeliveries(p: {
  since: string;
  subscriber: string | null;
  now: string;
}): Script<number[]> {
  const at = typed(p.now, 'timestamptz');
  const rows = yield* all<{ id: number }>(sql`
    UPDATE deliveries SET state = 'pending', attempts = 0, next_attempt_at = ${at}, redriven_at = ${at},
      dead_at = NULL, updated_at = ${at}
    WHERE state = 'dead' AND dead_at >= ${typed(p.since, 'timestamptz')}
      AND (${typed(p.subscriber, 'text')} IS NULL OR subscriber = ${p.subscriber})
    RETURNING id`);
  return rows.map((r) => r.id).sort((a, b) => a - b);
}

/**
 * When the subscriber's head row (its oldest unsettled one) may be sent: its next attempt time, or
 * when its lease runs out (one row `at`, ISO); none when nothing waits. The head decides: rows
 * behind it are due but wait for it, so their times do not count.
 */
export const nextDueStatement = (subscriber: string) => sql`
  SELECT CASE WHEN state = 'pending' THEN next_attempt_at ELSE lease_until END AS at FROM deliveries
  WHERE subscriber = ${subscriber} AND ${UNSETTLED} ORDER BY id LIMIT 1`;

/** Filters of a listing. */
export interface DeliveryFilter {
  state?: DeliveryState | undefined;
  subscriber?: string | undefined;
  /** Rows with an id greater than this (the cursor). */
  after?: number | undefined;
  limit: number;
}

/** Rows in id order; a page of at most `limit`. */
export const listStatement = (f: DeliveryFilter) => sql`
  SELECT * FROM deliveries
  WHERE (${typed(f.state ?? null, 'text')} IS NULL OR state = ${f.state ?? null})
    AND (${typed(f.subscriber ?? null, 'text')} IS NULL OR subscriber = ${f.subscriber ?? null})
    AND id > ${f.after ?? 0}
  ORDER BY id ${limitRows(f.limit)}`;

/** One delivery by id. */
export const getStatement = (id: number) => sql`SELECT * FROM deliveries WHERE id = ${id}`;
