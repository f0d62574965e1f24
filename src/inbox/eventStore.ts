/**
 * All SQL of the inbox's own tables (webhook_events, webhook_rejections, and the custody ids a
 * deposit adds), prepared once per database handle (hot path: every webhook runs a few of these
 * inside one synchronous transaction). The operations' rows are read and moved through
 * operations/reads.ts and operations/store.ts.
 */
import type { Sqlite } from '../db/open.js';
import { perHandle } from '../db/perHandle.js';

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

function prepareAll(sqlite: Sqlite) {
  return {
    insertEvent: sqlite.prepare<
      [
        string,
        string,
        string | null,
        string | null,
        string | null,
        string | null,
        string | null,
        string,
        string,
        number,
        number | null,
        string,
        string | null,
      ],
      { id: number }
    >(
      `INSERT INTO webhook_events
         (webhook_id, received_at, event_type, event_status, marketplaceTransactionRef, decision, reason, body, body_hash, id_reused, outbox_id, outcome, applied_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (webhook_id, body_hash) DO NOTHING
       RETURNING id`,
    ),
    /** Earlier events with this webhook id; the body only for rows stored before body_hash was kept. */
    eventsByWebhookId: sqlite.prepare<[string], { body_hash: string | null; body: string | null }>(
      `SELECT body_hash, CASE WHEN body_hash IS NULL THEN body END AS body
         FROM webhook_events WHERE webhook_id = ?`,
    ),
    undecidedEvents: sqlite.prepare<[], { id: number; webhook_id: string; body: string }>(
      `SELECT id, webhook_id, body FROM webhook_events WHERE outcome = 'undecided' ORDER BY id`,
    ),
    /** A stored undecided event, read again: what it decides now. */
    redecide: sqlite.prepare<[string | null, string | null, string, number | null, string | null, number]>(
      `UPDATE webhook_events SET decision = ?, reason = ?, outcome = ?, outbox_id = ?, applied_at = ?
        WHERE id = ?`,
    ),
    pendingByRef: sqlite.prepare<[string], PendingEvent>(
      `SELECT id, webhook_id, decision, reason FROM webhook_events
        WHERE marketplaceTransactionRef = ? AND outcome = 'pending'
        ORDER BY id`,
    ),
    setOutcome: sqlite.prepare<[string, number | null, string | null, number]>(
      'UPDATE webhook_events SET outcome = ?, outbox_id = ?, applied_at = ? WHERE id = ?',
    ),
    insertCustodyId: sqlite.prepare<[string, string, string]>(
      // A deposit of an id whose custody had ended puts it back in custody.
      `INSERT INTO custody_ids (kind, id, source, added_at) VALUES (?, ?, 'webhook', ?)
       ON CONFLICT (kind, id) DO UPDATE SET ended_at = NULL`,
    ),
    insertRejection: sqlite.prepare<[string, number, string]>(
      'INSERT INTO webhook_rejections (at, status, reason) VALUES (?, ?, ?)',
    ),
    pruneRejections: sqlite.prepare<[string]>('DELETE FROM webhook_rejections WHERE at < ?'),
    conflicts: sqlite.prepare<[], ConflictRow>(
      `SELECT id, webhook_id, marketplaceTransactionRef, decision, received_at, outbox_id
         FROM webhook_events WHERE outcome = 'conflict' ORDER BY id`,
    ),
  };
}

/** The prepared statements of the inbox. */
export type InboxStatements = ReturnType<typeof prepareAll>;

/** The inbox's statements for this handle, prepared on first use. */
export const inboxStatements: (sqlite: Sqlite) => InboxStatements = perHandle(prepareAll);

/** Webhook events recorded as conflicting decisions (a critical problem for status). */
export function decisionConflicts(sqlite: Sqlite): ConflictRow[] {
  return inboxStatements(sqlite).conflicts.all();
}

/** Records a refused request (status and reason only: nothing the sender sent is kept). */
export function recordRejection(sqlite: Sqlite, atIso: string, status: number, reason: string): void {
  inboxStatements(sqlite).insertRejection.run(atIso, status, reason.slice(0, 200));
}

/** Deletes refusals recorded before `beforeIso`; returns how many. */
export function pruneRejections(sqlite: Sqlite, beforeIso: string): number {
  return inboxStatements(sqlite).pruneRejections.run(beforeIso).changes;
}
