import { type Clock, isoAt } from '../common/clock.js';
import { SteerError } from '../common/errors.js';
import type { DeliveriesAccess } from './deliveriesStore.js';
import { DELIVERY_STATES, type DeliveryRow, type DeliveryState } from './queries.js';

/** Listing and steering deliveries: what `vcu-sync deliveries` and `/v1/deliveries` share. */

/** A delivery as shown to people and the API (the body is allow-listed, but not repeated here). */
export interface DeliveryEntry {
  id: number;
  subscriber: string;
  type: string;
  marketplaceTransactionRef: string;
  webhookId: string;
  state: DeliveryState;
  attempts: number;
  nextAttemptAt: string;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: string;
  deliveredAt: string | null;
  deadAt: string | null;
  /** Its subscriber is not in the config (renamed or removed): nothing sends it (see prune.ts). */
  orphaned: boolean;
}

/** A row as shown; `configured`: the subscribers' keys in the config now. */
export function deliveryEntry(row: DeliveryRow, configured: readonly string[]): DeliveryEntry {
  return {
    id: row.id,
    subscriber: row.subscriber,
    type: row.event_type,
    marketplaceTransactionRef: row.ref,
    webhookId: row.webhook_id,
    state: row.state,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    lastStatus: row.last_status,
    lastError: row.last_error,
    createdAt: row.created_at,
    deliveredAt: row.delivered_at,
    deadAt: row.dead_at,
    orphaned: !configured.includes(row.subscriber),
  };
}

export function parseDeliveryState(state: string | undefined): DeliveryState | undefined {
  if (state === undefined || state === '') return undefined;
  if ((DELIVERY_STATES as readonly string[]).includes(state)) return state as DeliveryState;
  throw new SteerError('invalid', `state must be one of ${DELIVERY_STATES.join(', ')}`);
}

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--since`: an ISO time, or a duration back from now (`90s`, `30m`, `2h`, `3d`); ISO out. Pure. */
export function parseSince(since: string, nowMs: number): string {
  const duration = /^(\d+)([smhd])$/.exec(since.trim());
  if (duration) return isoAt(nowMs - Number(duration[1]) * (UNIT_MS[duration[2]!] ?? 0));
  const at = Date.parse(since);
  if (!/^\d{4}-\d{2}-\d{2}/.test(since) || Number.isNaN(at))
    throw new SteerError(
      'invalid',
      'since must be an ISO time (2026-01-02T03:04:05Z) or a duration such as 30m, 2h, 3d',
    );
  return isoAt(at);
}

/** A page of deliveries, oldest first. */
export async function listDeliveryEntries(
  access: DeliveriesAccess,
  f: {
    state?: string | undefined;
    subscriber?: string | undefined;
    after?: number | undefined;
    limit?: number | undefined;
    /** The subscribers' keys in the config now (subscriberKeys): any other's rows are orphaned. */
    configured: readonly string[];
  },
): Promise<{ items: DeliveryEntry[]; nextCursor: string | null }> {
  const limit = Math.min(Math.max(f.limit ?? 100, 1), 1000);
  const rows = await access.list({
    state: parseDeliveryState(f.state),
    subscriber: f.subscriber,
    after: f.after,
    limit: limit + 1,
  });
  const items = rows.slice(0, limit).map((row) => deliveryEntry(row, f.configured));
  return { items, nextCursor: rows.length > limit ? String(items.at(-1)!.id) : null };
}

/** A dead delivery sent again (attempts reset), or a pending one made due now. */
export async function retryDeliveryById(
  access: DeliveriesAccess,
  clock: Clock,
  id: number,
  configured: readonly string[],
): Promise<DeliveryEntry> {
  const row = await access.retry(id, isoAt(clock.now()));
  if (row) return deliveryEntry(row, configured);
  const found = await access.get(id);
  if (!found) throw new SteerError('not-found', `no delivery ${id}`);
  throw new SteerError(
    'conflict',
    `delivery ${id} is ${found.state}; only dead or pending ones can be retried`,
  );
}

/** Every dead delivery that died since `since` (ISO or duration) back to pending. */
export async function redriveSince(
  access: DeliveriesAccess,
  clock: Clock,
  since: string,
  subscriber: string | undefined,
): Promise<{ since: string; redriven: number; ids: number[] }> {
  const now = clock.now();
  const sinceIso = parseSince(since, now);
  const ids = await access.redrive({ since: sinceIso, subscriber: subscriber ?? null, now: isoAt(now) });
  return { since: sinceIso, redriven: ids.length, ids };
}
