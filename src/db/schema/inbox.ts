import { type ColumnKinds, type ColumnTypes, index, table, uniqueIndex } from './kinds.js';

/** Every authenticated webhook as received, with its decision and the outbox row it matched. */
export const webhookEventsTable = <C extends ColumnTypes>(k: ColumnKinds<C>, outboxId: () => C['column']) =>
  table(
    'webhook_events',
    {
      id: k.rowId(),
      /** The sender's message id; the same id with the same body again has no second effect. */
      webhook_id: k.text().notNull(),
      /** sha256 (hex) of the body bytes as received; null on rows stored before it was kept. */
      body_hash: k.text(),
      /** Whether an earlier event had this webhook_id with another body (a new fact, not a replay). */
      id_reused: k.flag(),
      received_at: k.at().notNull(),
      event_type: k.text(),
      /** The payload's status value as received (with event_type: the words the decision was read from). */
      event_status: k.text(),
      marketplaceTransactionRef: k.text(),
      /** `approved`, `rejected`, `deposit`, or null for an event that decides nothing. */
      decision: k.text(),
      reason: k.text(),
      /** The body exactly as received (text, not jsonb: jsonb would reorder keys and drop duplicates). */
      body: k.text().notNull(),
      outbox_id: k.reference(outboxId, 'set null'),
      /** `applied`, `pending` (operation not known yet), `duplicate`, `conflict`, `ignored`, `undecided` (words in no `webhook.decisions` list). */
      outcome: k.text().notNull(),
      applied_at: k.at(),
    },
    {
      indexes: [
        index('webhook_events_ref_idx', 'marketplaceTransactionRef', 'outcome'),
        uniqueIndex('webhook_events_id_body_idx', 'webhook_id', 'body_hash'),
      ],
    },
  );

/** Webhook requests refused before they were trusted (bad signature, stale timestamp, ...). */
export const webhookRejectionsTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  table(
    'webhook_rejections',
    {
      id: k.rowId(),
      at: k.at().notNull(),
      status: k.int().notNull(),
      reason: k.text().notNull(),
    },
    { indexes: [index('webhook_rejections_at_idx', 'at')] },
  );

/** Small key/value facts the daemon shares with `vcu-sync status` (e.g. sending paused). */
export const daemonStateTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  table('daemon_state', {
    key: k.key(),
    value: k.text().notNull(),
    updated_at: k.at().notNull(),
  });
