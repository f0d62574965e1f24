import { boolean, index, integer, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { at, int64, rowId } from './columns.js';
import { outbox } from './outbox.js';

/** Every authenticated webhook as received, with its decision and the outbox row it matched. */
export const webhookEvents = pgTable(
  'webhook_events',
  {
    id: rowId('id'),
    /** The sender's message id; the same id with the same body again has no second effect. */
    webhook_id: text('webhook_id').notNull(),
    /** sha256 (hex) of the body bytes as received; null on rows stored before it was kept. */
    body_hash: text('body_hash'),
    /** Whether an earlier event had this webhook_id with another body (a new fact, not a replay). */
    id_reused: boolean('id_reused').notNull().default(false),
    received_at: at('received_at').notNull(),
    event_type: text('event_type'),
    /** The payload's status value as received (with event_type: the words the decision was read from). */
    event_status: text('event_status'),
    marketplaceTransactionRef: text('marketplaceTransactionRef'),
    /** `approved`, `rejected`, `deposit`, or null for an event that decides nothing. */
    decision: text('decision'),
    reason: text('reason'),
    /** The body exactly as received (text, not jsonb: jsonb would reorder keys and drop duplicates). */
    body: text('body').notNull(),
    outbox_id: int64('outbox_id').references(() => outbox.id, { onDelete: 'set null' }),
    /** `applied`, `pending` (operation not known yet), `duplicate`, `conflict`, `ignored`, `undecided`. */
    outcome: text('outcome').notNull(),
    applied_at: at('applied_at'),
  },
  (t) => [
    index('webhook_events_ref_idx').on(t.marketplaceTransactionRef, t.outcome),
    uniqueIndex('webhook_events_id_body_idx').on(t.webhook_id, t.body_hash),
  ],
);

/** Webhook requests refused before they were trusted (bad signature, stale timestamp, ...). */
export const webhookRejections = pgTable(
  'webhook_rejections',
  {
    id: rowId('id'),
    at: at('at').notNull(),
    status: integer('status').notNull(),
    reason: text('reason').notNull(),
  },
  (t) => [index('webhook_rejections_at_idx').on(t.at)],
);

/** Small key/value facts the daemon shares with `vcu-sync status` (e.g. sending paused). */
export const daemonState = pgTable('daemon_state', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  updated_at: at('updated_at').notNull(),
});
