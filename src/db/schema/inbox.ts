import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { outbox } from './outbox.js';

/** Every authenticated webhook as received, with its decision and the outbox row it matched. */
export const webhookEvents = sqliteTable(
  'webhook_events',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    /** The sender's message id; the same id with the same body again has no second effect. */
    webhook_id: text('webhook_id').notNull(),
    /** sha256 (hex) of the body bytes as received; null on rows stored before it was kept. */
    body_hash: text('body_hash'),
    /** Whether an earlier event had this webhook_id with another body (a new fact, not a replay). */
    id_reused: integer('id_reused', { mode: 'boolean' }).notNull().default(false),
    received_at: text('received_at').notNull(),
    event_type: text('event_type'),
    /** The payload's status value as received (with event_type: the words the decision was read from). */
    event_status: text('event_status'),
    marketplaceTransactionRef: text('marketplaceTransactionRef'),
    /** `approved`, `rejected`, `deposit`, or null for an event that decides nothing. */
    decision: text('decision'),
    reason: text('reason'),
    body: text('body').notNull(),
    outbox_id: integer('outbox_id').references(() => outbox.id, { onDelete: 'set null' }),
    /** `applied`, `pending` (operation not known yet), `duplicate`, `conflict`, `ignored`, `undecided` (words in no `webhook.decisions` list). */
    outcome: text('outcome').notNull(),
    applied_at: text('applied_at'),
  },
  (t) => [
    index('webhook_events_ref_idx').on(t.marketplaceTransactionRef, t.outcome),
    uniqueIndex('webhook_events_id_body_idx').on(t.webhook_id, t.body_hash),
  ],
);

/** Webhook requests refused before they were trusted (bad signature, stale timestamp, ...). */
export const webhookRejections = sqliteTable(
  'webhook_rejections',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    at: text('at').notNull(),
    status: integer('status').notNull(),
    reason: text('reason').notNull(),
  },
  (t) => [index('webhook_rejections_at_idx').on(t.at)],
);

/** Small key/value facts the daemon shares with `vcu-sync status` (e.g. sending paused). */
export const daemonState = sqliteTable('daemon_state', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
  updated_at: text('updated_at').notNull(),
});
