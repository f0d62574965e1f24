import type { Sqlite } from '../db/open.js';
import type { DeliveryRow, DeliveryState } from './queries.js';

/** Read-only queries over `deliveries`, for the CLI, the API, status and metrics. */

/** Filters of a listing. */
export interface DeliveryFilter {
  state?: DeliveryState | undefined;
  subscriber?: string | undefined;
  /** Rows with an id greater than this (the cursor). */
  after?: number | undefined;
  limit: number;
}

/** Rows in id order; a page of at most `limit`. */
export function listDeliveries(sqlite: Sqlite, f: DeliveryFilter): DeliveryRow[] {
  return sqlite
    .prepare(
      `SELECT * FROM deliveries
       WHERE (@state IS NULL OR state = @state) AND (@subscriber IS NULL OR subscriber = @subscriber) AND id > @after
       ORDER BY id LIMIT @limit`,
    )
    .all({
      state: f.state ?? null,
      subscriber: f.subscriber ?? null,
      after: f.after ?? 0,
      limit: f.limit,
    }) as DeliveryRow[];
}

/** One delivery by id. */
export function getDelivery(sqlite: Sqlite, id: number): DeliveryRow | undefined {
  return sqlite.prepare('SELECT * FROM deliveries WHERE id = ?').get(id) as DeliveryRow | undefined;
}

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
