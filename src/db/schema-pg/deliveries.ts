import { index, integer, pgTable, text } from 'drizzle-orm/pg-core';
import { at, rowId } from './columns.js';

/** One row per event owed to one subscriber (see ../schema/deliveries.ts). */
export const deliveries = pgTable(
  'deliveries',
  {
    id: rowId('id'),
    subscriber: text('subscriber').notNull(),
    event_type: text('event_type').notNull(),
    ref: text('ref').notNull(),
    webhook_id: text('webhook_id').notNull().unique(),
    body: text('body').notNull(),
    /** `pending`, `sending`, `delivered`, `dead`. */
    state: text('state').notNull(),
    attempts: integer('attempts').notNull().default(0),
    next_attempt_at: at('next_attempt_at').notNull(),
    lease_owner: text('lease_owner'),
    lease_until: at('lease_until'),
    last_error: text('last_error'),
    last_status: integer('last_status'),
    created_at: at('created_at').notNull(),
    updated_at: at('updated_at').notNull(),
    delivered_at: at('delivered_at'),
    dead_at: at('dead_at'),
    redriven_at: at('redriven_at'),
  },
  (t) => [
    index('deliveries_subscriber_state_idx').on(t.subscriber, t.state, t.id),
    index('deliveries_state_idx').on(t.state, t.id),
  ],
);
