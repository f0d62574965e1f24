import type { Statement } from 'better-sqlite3';
import type { Sqlite } from '../db/open.js';
import { perHandle } from '../db/perHandle.js';
import type { deliveries } from '../db/schema/sqlite.js';

/**
 * Every statement that changes a `deliveries` row on SQLite (enqueue.ts inserts them), and the
 * guards of every move for both dialects (PostgreSQL's statements, pgStore.ts, use the same ones).
 * Synchronous: run them in the commit queue or a transaction (storeSeam.ts). A delivery's life:
 *
 * ```
 * pending ── claim (due, head of its subscriber) ──▶ sending ── 2xx ──▶ delivered
 *    ▲  ▲                                               │ failure: retry ──▶ pending (backoff)
 *    │  └──────────── release (stop, start-up) ─────────┤ failure past max attempts / age
 *    └──── retry / redrive (a person) ◀── dead ◀────────┘
 * ```
 */

/** A delivery exactly as stored. */
export type DeliveryRow = typeof deliveries.$inferSelect;

export const DELIVERY_STATES = ['pending', 'sending', 'delivered', 'dead'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/** Each dialect's placeholders for the guards below (SQLite `@now`; PostgreSQL `$1::timestamptz`). */
export interface DeliveryGuardParams {
  now: string;
  owner: string;
}

/**
 * The guard of every transition above, for both dialects (this file's statements and pgStore.ts's):
 * a row moves only from the states its arrow starts at, so a refused move changes nothing.
 */
export const deliveryGuards = (p: DeliveryGuardParams) => ({
  /** Unsettled: what holds back the rows behind it. */
  unsettled: `state IN ('pending', 'sending')`,
  claim: `((state = 'pending' AND next_attempt_at <= ${p.now}) OR (state = 'sending' AND lease_until < ${p.now}))`,
  /** Settle or release by the claimant: only while it still holds the lease. */
  held: `state = 'sending' AND lease_owner = ${p.owner}`,
  /** Release whoever holds it (a dead claimant). */
  claimed: `state = 'sending'`,
  retry: `state IN ('dead', 'pending')`,
  redrive: `state = 'dead'`,
});

const G = deliveryGuards({ now: '@now', owner: '@owner' });

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

const prepareAll = (sqlite: Sqlite) => {
  const p = <T = unknown>(sql: string) => sqlite.prepare(sql) as Statement<unknown[], T>;
  return {
    // The subscriber's unsettled rows from the oldest: the claim takes the prefix it may send.
    head: p<Pick<DeliveryRow, 'id' | 'state' | 'next_attempt_at' | 'lease_until'>>(`
      SELECT id, state, next_attempt_at, lease_until FROM deliveries
      WHERE subscriber = @subscriber AND ${G.unsettled} ORDER BY id LIMIT @limit`),
    claimOne: p<DeliveryRow>(`
      UPDATE deliveries SET state = 'sending', attempts = attempts + 1, lease_owner = @owner,
        lease_until = @leaseUntil, updated_at = @now
      WHERE id = @id AND ${G.claim}
      RETURNING *`),
    delivered: p(`
      UPDATE deliveries SET state = 'delivered', last_status = @status, last_error = NULL, delivered_at = @now,
        updated_at = @now, lease_owner = NULL, lease_until = NULL
      WHERE id = @id AND ${G.held}`),
    requeue: p(`
      UPDATE deliveries SET state = 'pending', next_attempt_at = @next, last_status = @status, last_error = @error,
        updated_at = @now, lease_owner = NULL, lease_until = NULL
      WHERE id = @id AND ${G.held}`),
    dead: p(`
      UPDATE deliveries SET state = 'dead', last_status = @status, last_error = @error, dead_at = @now,
        updated_at = @now, lease_owner = NULL, lease_until = NULL
      WHERE id = @id AND ${G.held}`),
    release: p(`
      UPDATE deliveries SET state = 'pending', attempts = MAX(0, attempts - 1), updated_at = @now,
        lease_owner = NULL, lease_until = NULL
      WHERE id = @id AND ${G.held}`),
    releaseAll: p(`
      UPDATE deliveries SET state = 'pending', attempts = MAX(0, attempts - 1), updated_at = @now,
        lease_owner = NULL, lease_until = NULL
      WHERE ${G.claimed}`),
    releaseOwner: p(`
      UPDATE deliveries SET state = 'pending', attempts = MAX(0, attempts - 1), updated_at = @now,
        lease_owner = NULL, lease_until = NULL
      WHERE ${G.held}`),
    retryOne: p<DeliveryRow>(`
      UPDATE deliveries SET state = 'pending', attempts = CASE WHEN state = 'dead' THEN 0 ELSE attempts END,
        next_attempt_at = @now, redriven_at = CASE WHEN state = 'dead' THEN @now ELSE redriven_at END,
        dead_at = NULL, updated_at = @now
      WHERE id = @id AND ${G.retry} RETURNING *`),
    redrive: p<{ id: number }>(`
      UPDATE deliveries SET state = 'pending', attempts = 0, next_attempt_at = @now, redriven_at = @now,
        dead_at = NULL, updated_at = @now
      WHERE ${G.redrive} AND dead_at >= @since AND (@subscriber IS NULL OR subscriber = @subscriber)
      RETURNING id`),
    // The head decides: rows behind it are due but wait for it, so their times do not count.
    nextDue: p<string | null>(`
      SELECT CASE WHEN state = 'pending' THEN next_attempt_at ELSE lease_until END FROM deliveries
      WHERE subscriber = @subscriber AND ${G.unsettled} ORDER BY id LIMIT 1`).pluck(),
  };
};

const statements = perHandle(prepareAll);

/** What a claim needs. */
export interface DeliveryClaim {
  subscriber: string;
  owner: string;
  now: string;
  leaseUntil: string;
  /** Most rows claimed at once (they are sent one after another, in order). */
  limit: number;
}

/**
 * Claims the subscriber's oldest unsettled rows, in id order, as long as each may be sent now
 * (pending and due, or sending under a lease that ran out); stops at the first that may not, so
 * nothing overtakes an older row, and after a row being retried (one probe at a time to a failing
 * subscriber). Compare-and-swap per row.
 */
export function claimDeliveries(sqlite: Sqlite, c: DeliveryClaim): DeliveryRow[] {
  const st = statements(sqlite);
  const rows: DeliveryRow[] = [];
  for (const head of st.head.all({ subscriber: c.subscriber, limit: c.limit })) {
    if (!sendableNow(head, c.now)) break;
    const row = st.claimOne.get({ id: head.id, owner: c.owner, leaseUntil: c.leaseUntil, now: c.now });
    if (!row) break;
    rows.push(row);
    // A row tried before is a probe of a failing subscriber: alone, the rest wait untouched behind it.
    if (row.attempts > 1) break;
  }
  return rows;
}

/**
 * The same rule for a claimer that reads the head first and claims after (PostgreSQL's): the ids
 * to take, in order, from head rows as they stand under the claimer's row locks (`null` for a row
 * it could not lock: another claimer's, so it stops there). Pure.
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

/** What an attempt's answer moves a claimed row to (see nextStep.ts). */
export type DeliveryStep =
  | { to: 'delivered'; status: number }
  | { to: 'pending'; nextAttemptAt: string; status: number | null; error: string }
  | { to: 'dead'; status: number | null; error: string };

/** Settles a claimed row; false when `owner` no longer holds it (another claimant settles it). */
export function settleDelivery(
  sqlite: Sqlite,
  d: { id: number; owner: string; now: string },
  step: DeliveryStep,
): boolean {
  const st = statements(sqlite);
  const result =
    step.to === 'delivered'
      ? st.delivered.run({ ...d, status: step.status })
      : step.to === 'dead'
        ? st.dead.run({ ...d, status: step.status, error: step.error })
        : st.requeue.run({ ...d, next: step.nextAttemptAt, status: step.status, error: step.error });
  return result.changes > 0;
}

/** Hands a claimed row back unsent (attempt not counted). */
export function releaseDelivery(sqlite: Sqlite, d: { id: number; owner: string; now: string }): boolean {
  return statements(sqlite).release.run(d).changes > 0;
}

/**
 * Hands back every claimed row, whoever claimed it: only for the daemon that owns the SQLite file,
 * at start-up (every claimant it finds is dead). Returns how many went back.
 */
export function releaseAllDeliveries(sqlite: Sqlite, nowIso: string): number {
  return statements(sqlite).releaseAll.run({ now: nowIso }).changes;
}

/** Hands back every row `owner` holds (a dead replica's); how many went back. */
export function releaseOwnedDeliveries(sqlite: Sqlite, owner: string, nowIso: string): number {
  return statements(sqlite).releaseOwner.run({ owner, now: nowIso }).changes;
}

/** A dead row back to pending (attempts reset), or a pending one made due now; undefined otherwise. */
export function retryDelivery(sqlite: Sqlite, id: number, nowIso: string): DeliveryRow | undefined {
  return statements(sqlite).retryOne.get({ id, now: nowIso });
}

/** Every dead row that died at or after `since` (of one subscriber, if named) back to pending; their ids. */
export function redriveDeliveries(
  sqlite: Sqlite,
  p: { since: string; subscriber: string | null; now: string },
): number[] {
  return statements(sqlite)
    .redrive.all(p)
    .map((r) => r.id)
    .sort((a, b) => a - b);
}

/**
 * When the subscriber's head row (its oldest unsettled one) may be sent (ISO): its next attempt
 * time, or when its lease runs out; null when nothing waits.
 */
export function nextDeliveryDue(sqlite: Sqlite, subscriber: string): string | null {
  return statements(sqlite).nextDue.get({ subscriber }) ?? null;
}
