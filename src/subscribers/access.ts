import { commitQueueFor, REQUEST_BUSY_GRACE_MS } from '../db/commitQueue.js';
import type { Sqlite } from '../db/open.js';
import { type DeliveryRow, redriveDeliveries, retryDelivery } from './queries.js';
import { type DeliveryFilter, getDelivery, listDeliveries } from './reads.js';

/**
 * Where `/v1/deliveries` and `vcu-sync deliveries` read and steer deliveries: SQLite's below, over
 * the context's file; PostgreSQL's is pgStore.ts `pgDeliveriesAccess` (kept apart so `pg` stays
 * out of SQLite runs). The moves are queries.ts's on both.
 */
export interface DeliveriesAccess {
  /** Rows in id order; a page of at most `limit`. */
  list(f: DeliveryFilter): Promise<DeliveryRow[]>;
  get(id: number): Promise<DeliveryRow | undefined>;
  /** A dead row back to pending (attempts reset), or a pending one made due now; undefined otherwise. */
  retry(id: number, nowIso: string): Promise<DeliveryRow | undefined>;
  /** Every dead row that died at or after `since` (of one subscriber, if named) back to pending; their ids. */
  redrive(p: { since: string; subscriber: string | null; now: string }): Promise<number[]>;
}

/** The deliveries of a SQLite file; steering goes through its group commit, a request refused after a short wait. */
export function sqliteDeliveriesAccess(sqlite: Sqlite): DeliveriesAccess {
  const commits = commitQueueFor(sqlite);
  const grace = { busyGraceMs: REQUEST_BUSY_GRACE_MS };
  return {
    list: async (f) => listDeliveries(sqlite, f),
    get: async (id) => getDelivery(sqlite, id),
    retry: (id, nowIso) => commits.submit(() => retryDelivery(sqlite, id, nowIso), grace),
    redrive: (p) => commits.submit(() => redriveDeliveries(sqlite, p), grace),
  };
}
