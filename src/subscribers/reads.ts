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
