import type { Masker } from '../operations/personal.js';
import type { DecisionEffect, ReceivedWebhook, RecordResult } from './correlate.js';
import type { ConflictRow } from './eventStore.js';
import type { PayloadFields } from './interpret.js';
import type { RereadResult } from './reread.js';
import type { Vocabulary } from './vocabulary.js';

/**
 * The webhook inbox's store, the same on both dialects, at the granularity of one webhook and of
 * the batch jobs around it. `receive` masks the event's personal data, recognises a replay (webhook
 * id + body hash), records it, correlates it with its outbox row and applies its decision through
 * the transition table (operations/decision.ts), the row's feed rows and deliveries included: all
 * in one transaction (on SQLite one job of the connection's group commit; on PostgreSQL one
 * transaction, safe with several replicas receiving webhooks at once). Side effects that are not
 * SQL come back as {@link DecisionEffect}s to report after the commit. Implemented once, over
 * either store's scripts: ./inboxStore.ts.
 */
export interface InboxStore {
  receive(webhook: ReceivedWebhook): Promise<RecordResult>;
  /** Records a refused request (status and reason only: nothing the sender sent is kept). */
  recordRejection(atIso: string, status: number, reason: string): Promise<void>;
  /** Applies pending decisions to every row accepted by now, and deletes refusals before `pruneBeforeIso`. */
  maintain(nowIso: string, pruneBeforeIso: string): Promise<{ effects: DecisionEffect[]; pruned: number }>;
  /** Reads the undecided events again with this vocabulary (at start-up) and acts on what now decides. */
  rereadUndecided(fields: PayloadFields, vocabulary: Vocabulary, nowIso: string): Promise<RereadResult>;
  /** Webhook events recorded as conflicting decisions (a critical problem for status). */
  decisionConflicts(): Promise<ConflictRow[]>;
  /**
   * A row just accepted: masks its personal values (`mask`) in the events naming it, then applies
   * the decisions that arrived early. Nothing unless the row is accepted by then.
   */
  afterAccepted(op: { id: number; ref: string; mask: Masker }, nowIso: string): Promise<DecisionEffect[]>;
  /** Masks `mask`'s values out of every event naming `ref` (a scrubbed row); returns how many changed. */
  maskEventsOf(ref: string, mask: Masker): Promise<number>;
}
