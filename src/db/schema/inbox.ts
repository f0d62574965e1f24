import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { outbox } from './outbox.js';

/** Every authenticated webhook as received, with its decision and the outbox row it matched. */
export const webhookEvents = sqliteTable(
  'webhook_events',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    /** The sender's message id; the same id again has no second effect. */
    webhook_id: text('webhook_id').notNull().unique(),
    received_at: text('received_at').notNull(),
    event_type: text('event_type'),
    marketplaceTransactionRef: text('marketplaceTransactionRef'),
    /** `approved`, `rejected`, `deposit`, or null for an event that decides nothing. */
    decision: text('decision'),
    reason: text('reason'),
    body: text('body').notNull(),
    outbox_id: integer('outbox_id').references(() => outbox.id, { onDelete: 'set null' }),
    /** `applied`, `pending` (operation not known yet), `conflict`, `ignored`. */
    outcome: text('outcome').notNull(),
    applied_at: text('applied_at'),
  },
  (t) => [index('webhook_events_ref_idx').on(t.marketplaceTransactionRef, t.outcome)],
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
