import { type ColumnKinds, type ColumnTypes, index, table } from './kinds.js';
import { sendingColumns } from './outbox.js';

/**
 * One row per event owed to one subscriber (`[[subscribers]]`): written in the transaction that
 * changed the operation, sent by the subscriber dispatcher (src/subscribers/). Per subscriber,
 * rows leave in `id` order. The body holds allow-listed fields only, never a personal one.
 */
export const deliveriesTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  table(
    'deliveries',
    {
      id: k.rowId(),
      /** The subscriber's `name`, or a stable id derived from its URL. */
      subscriber: k.text().notNull(),
      /** `operation.accepted`, `operation.approved`, ... */
      event_type: k.text().notNull(),
      /** The operation it is about (not personal). */
      ref: k.text().notNull(),
      /** Standard Webhooks `webhook-id`, the same on every attempt. */
      webhook_id: k.uniqueText(),
      /** The JSON body exactly as sent, on every attempt. */
      body: k.text().notNull(),
      state: k.state<'pending' | 'sending' | 'delivered' | 'dead'>(),
      ...sendingColumns(k),
      created_at: k.at().notNull(),
      updated_at: k.at().notNull(),
      delivered_at: k.at(),
      dead_at: k.at(),
      /** When a person last sent a dead row again; max age counts from here. */
      redriven_at: k.at(),
    },
    {
      indexes: [
        // The dispatcher reads the oldest unsettled row per subscriber.
        index('deliveries_subscriber_state_idx', 'subscriber', 'state', 'id'),
        index('deliveries_state_idx', 'state', 'id'),
      ],
    },
  );
