import { REQUEST_BUSY_GRACE_MS, type ScriptStore } from '../store/script.js';
import {
  type DeliveryFilter,
  type DeliveryRow,
  getStatement,
  listStatement,
  redriveDeliveries,
  retryDelivery,
} from './queries.js';

/** Where `/v1/deliveries` and `vcu-sync deliveries` read and steer deliveries (manage.ts). */
export interface DeliveriesAccess {
  /** Rows in id order; a page of at most `limit`. */
  list(f: DeliveryFilter): Promise<DeliveryRow[]>;
  get(id: number): Promise<DeliveryRow | undefined>;
  /** A dead row back to pending (attempts reset), or a pending one made due now; undefined otherwise. */
  retry(id: number, nowIso: string): Promise<DeliveryRow | undefined>;
  /** Every dead row that died at or after `since` (of one subscriber, if named) back to pending; their ids. */
  redrive(p: { since: string; subscriber: string | null; now: string }): Promise<number[]>;
}

/** The deliveries of either store; a request's steering refused after a short wait for the write lock. */
export function deliveriesAccess(store: ScriptStore): DeliveriesAccess {
  const grace = { busyGraceMs: REQUEST_BUSY_GRACE_MS };
  return {
    list: (f) => store.read<DeliveryRow>(listStatement(f)),
    get: async (id) => (await store.read<DeliveryRow>(getStatement(id)))[0],
    retry: (id, nowIso) => store.transaction(retryDelivery(id, nowIso), grace),
    redrive: (p) => store.transaction(redriveDeliveries(p), grace),
  };
}
