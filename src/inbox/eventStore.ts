/**
 * The statements of the inbox's own tables (webhook_events, webhook_rejections, and the custody
 * ids a deposit adds), written once for both stores (store/sql.ts). The rules that run them are
 * correlate.ts, reread.ts and mask.ts; the operations' rows move through operations/decision.ts.
 */
import { join, type Sql, sql, whenShared } from '../store/sql.js';
import type { Interpretation } from './interpret.js';

/** What became of one stored event (`webhook_events.outcome`). */
export type EventOutcome = 'applied' | 'pending' | 'duplicate' | 'conflict' | 'ignored' | 'undecided';

/** A stored event waiting for its operation. */
export interface PendingEvent {
  id: number;
  webhook_id: string;
  decision: 'approved' | 'rejected';
  reason: string | null;
}

/** A conflicting decision, for status. */
export interface ConflictRow {
  id: number;
  webhook_id: string;
  marketplaceTransactionRef: string | null;
  decision: string | null;
  received_at: string;
  outbox_id: number | null;
}

/** An event as it is inserted: the webhook's words (masked), and what became of it. */
export interface EventInsert {
  webhookId: string;
  receivedAt: string;
  meaning: Interpretation;
  body: string;
  bodyHash: string;
  idReused: boolean;
  outboxId: number | null;
  outcome: EventOutcome;
}

/** Inserts an event; changes no row when its (webhook id, body hash) is stored already (a replay). */
export function insertEvent(e: EventInsert): Sql {
  const { meaning: m } = e;
  return sql`
    INSERT INTO webhook_events (webhook_id, received_at, event_type, event_status, "marketplaceTransactionRef",
                                decision, reason, body, body_hash, id_reused, outbox_id, outcome, applied_at)
    VALUES (${e.webhookId}, ${e.receivedAt}, ${m.type}, ${m.status}, ${m.ref}, ${m.decision}, ${m.reason},
            ${e.body}, ${e.bodyHash}, ${e.idReused}, ${e.outboxId}, ${e.outcome},
            ${e.outcome === 'applied' ? e.receivedAt : null})
    ON CONFLICT (webhook_id, body_hash) DO NOTHING`;
}

/** Earlier events with this webhook id; the body only for rows stored before body_hash was kept. */
export const eventsByWebhookId = (webhookId: string): Sql => sql`
  SELECT body_hash, CASE WHEN body_hash IS NULL THEN body END AS body
    FROM webhook_events WHERE webhook_id = ${webhookId}`;

/** The decisions stored for `ref` before its row was accepted, in arrival order. */
export const pendingByRef = (ref: string): Sql => sql`
  SELECT id, webhook_id, decision, reason FROM webhook_events
   WHERE "marketplaceTransactionRef" = ${ref} AND outcome = 'pending' ORDER BY id`;

/** What became of a stored event once its operation was known. */
export const setOutcome = (
  id: number,
  outcome: EventOutcome,
  outboxId: number,
  appliedAt: string | null,
): Sql =>
  sql`UPDATE webhook_events SET outcome = ${outcome}, outbox_id = ${outboxId}, applied_at = ${appliedAt}
       WHERE id = ${id}`;

/** The events that decided nothing with the vocabulary of their day, in arrival order. */
export const undecidedEvents = (): Sql =>
  sql`SELECT id, webhook_id, body FROM webhook_events WHERE outcome = 'undecided' ORDER BY id`;

/** One undecided event, held until its transaction ends where replicas may read it again at once. */
export const stillUndecided = (id: number): Sql =>
  sql`SELECT id FROM webhook_events WHERE id = ${id} AND outcome = 'undecided' ${whenShared(sql`FOR UPDATE`)}`;

/** A stored undecided event, read again: what it decides now. */
export function redecide(
  id: number,
  e: {
    decision: string | null;
    reason: string | null;
    outcome: EventOutcome;
    outboxId: number | null;
    at: string | null;
  },
): Sql {
  return sql`
    UPDATE webhook_events SET decision = ${e.decision}, reason = ${e.reason}, outcome = ${e.outcome},
                              outbox_id = ${e.outboxId}, applied_at = ${e.at}
     WHERE id = ${id}`;
}

/**
 * Puts a deposit's ids in custody (an id whose custody had ended goes back in), one statement for
 * all of them; null when there are none. Distinct pairs: PostgreSQL refuses a statement that
 * upserts one row twice (a deposit naming an id twice).
 */
export function addCustodyIds(ids: ReadonlyArray<[kind: string, id: string]>, now: string): Sql | null {
  const distinct = new Map(ids.map(([kind, id]) => [JSON.stringify([kind, id]), [kind, id] as const]));
  if (distinct.size === 0) return null;
  const rows = [...distinct.values()].map(([kind, id]) => sql`(${kind}, ${id}, 'webhook', ${now})`);
  return sql`INSERT INTO custody_ids (kind, id, source, added_at) VALUES ${join(rows, ', ')}
             ON CONFLICT (kind, id) DO UPDATE SET ended_at = NULL`;
}

/** Records a refused request (status and reason only: nothing the sender sent is kept). */
export const insertRejection = (atIso: string, status: number, reason: string): Sql =>
  sql`INSERT INTO webhook_rejections (at, status, reason) VALUES (${atIso}, ${status}, ${reason.slice(0, 200)})`;

/** Deletes refusals recorded before `beforeIso`. */
export const pruneRejections = (beforeIso: string): Sql =>
  sql`DELETE FROM webhook_rejections WHERE at < ${beforeIso}`;

/** Webhook events recorded as conflicting decisions (a critical problem for status). */
export const decisionConflicts = (): Sql => sql`
  SELECT id, webhook_id, "marketplaceTransactionRef", decision, received_at, outbox_id
    FROM webhook_events WHERE outcome = 'conflict' ORDER BY id`;
