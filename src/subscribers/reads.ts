import type { Sqlite } from '../db/open.js';

/** The subscribers' backlogs over `deliveries`, for status and metrics (SQLite's; PostgreSQL's: health/pgSnapshot.ts). */

/** Per subscriber: rows by state, and when the oldest undelivered one was written. */
export interface SubscriberBacklog {
  subscriber: string;
  pending: number;
  dead: number;
  delivered: number;
  /** created_at (or redriven_at) of the oldest pending/sending row; null when none. */
  oldestPendingAt: string | null;
  /** The last failure of the head row, masked. */
  lastError: string | null;
}

/** The backlog of every subscriber that has rows. */
export function subscriberBacklogs(sqlite: Sqlite): SubscriberBacklog[] {
  const rows = sqlite
    .prepare(
      `SELECT subscriber,
         SUM(state IN ('pending', 'sending')) AS pending,
         SUM(state = 'dead') AS dead,
         SUM(state = 'delivered') AS delivered,
         MIN(CASE WHEN state IN ('pending', 'sending') THEN COALESCE(redriven_at, created_at) END) AS oldestPendingAt
       FROM deliveries GROUP BY subscriber ORDER BY subscriber`,
    )
    .all() as Array<Omit<SubscriberBacklog, 'lastError'>>;
  const lastError = sqlite
    .prepare(
      `SELECT last_error FROM deliveries WHERE subscriber = ? AND state IN ('pending', 'sending')
       ORDER BY id LIMIT 1`,
    )
    .pluck();
  return rows.map((r) => ({
    ...r,
    pending: Number(r.pending),
    dead: Number(r.dead),
    delivered: Number(r.delivered),
    lastError: r.pending > 0 ? ((lastError.get(r.subscriber) as string | null) ?? null) : null,
  }));
}
