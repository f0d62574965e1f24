import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * One row per event owed to one subscriber (`[[subscribers]]`): written in the transaction that
 * changed the operation, sent by the subscriber dispatcher (src/subscribers/). Per subscriber,
 * rows leave in `id` order. The body holds allow-listed fields only, never a personal one.
 */
export const deliveries = sqliteTable(
  'deliveries',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    /** The subscriber's `name`, or a stable id derived from its URL. */
    subscriber: text('subscriber').notNull(),
    /** `operation.accepted`, `operation.approved`, ... */
    event_type: text('event_type').notNull(),
    /** The operation it is about (not personal). */
    ref: text('ref').notNull(),
    /** Standard Webhooks `webhook-id`, the same on every attempt. */
    webhook_id: text('webhook_id').notNull().unique(),
    /** The JSON body exactly as sent, on every attempt. */
    body: text('body').notNull(),
    /** `pending`, `sending`, `delivered`, `dead`. */
    state: text('state', { enum: ['pending', 'sending', 'delivered', 'dead'] }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    next_attempt_at: text('next_attempt_at').notNull(),
    lease_owner: text('lease_owner'),
    lease_until: text('lease_until'),
    /** The last failure, masked. */
    last_error: text('last_error'),
    last_status: integer('last_status'),
    created_at: text('created_at').notNull(),
    updated_at: text('updated_at').notNull(),
    delivered_at: text('delivered_at'),
    dead_at: text('dead_at'),
    /** When a person last sent a dead row again; max age counts from here. */
    redriven_at: text('redriven_at'),
  },
  (t) => [
    // The dispatcher reads the oldest unsettled row per subscriber.
    index('deliveries_subscriber_state_idx').on(t.subscriber, t.state, t.id),
    index('deliveries_state_idx').on(t.state, t.id),
  ],
);
