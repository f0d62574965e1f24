import { index, integer, pgTable, text } from 'drizzle-orm/pg-core';
import { at, int64, rowId } from './columns.js';

/** One row per operation the marketplace queued for `/notify`. */
export const outbox = pgTable(
  'outbox',
  {
    id: rowId('id'),
    marketplaceTransactionRef: text('marketplaceTransactionRef').notNull().unique(),
    operationType: text('operationType').notNull(),
    /** Operations with the same key (unit or issuance) leave in queue order. */
    order_key: text('order_key'),
    /** The notification exactly as it is sent, on every attempt (text: the bytes must not change). */
    body: text('body').notNull(),
    /** Hash of the enqueued input, to tell a repeated enqueue from a conflicting one. */
    body_hash: text('body_hash').notNull(),
    /** `queued`, `sending`, `accepted`, `approved`, `rejected`, `failed`, `cancelled`. */
    state: text('state').notNull(),
    attempts: integer('attempts').notNull().default(0),
    next_attempt_at: at('next_attempt_at').notNull(),
    lease_owner: text('lease_owner'),
    lease_until: at('lease_until'),
    last_error: text('last_error'),
    last_status: integer('last_status'),
    /** The operator's answer to the accepted attempt. */
    response: text('response'),
    decision_reason: text('decision_reason'),
    created_at: at('created_at').notNull(),
    updated_at: at('updated_at').notNull(),
    accepted_at: at('accepted_at'),
    decided_at: at('decided_at'),
    /** When the row reached a final state (approved, rejected, failed, cancelled). */
    finished_at: at('finished_at'),
    /** When its personal fields were scrubbed. */
    scrubbed_at: at('scrubbed_at'),
    /** When a person last moved it from `failed` back to `queued`; max_age_hours counts from here. */
    retried_at: at('retried_at'),
  },
  (t) => [
    index('outbox_due_idx').on(t.state, t.next_attempt_at),
    index('outbox_order_idx').on(t.order_key, t.id),
    // Claims walk one state in id order and stop at the limit, instead of sorting every due row.
    index('outbox_state_id_idx').on(t.state, t.id),
  ],
);

/** Every delivery attempt of an outbox row. */
export const outboxAttempts = pgTable(
  'outbox_attempts',
  {
    id: rowId('id'),
    outbox_id: int64('outbox_id')
      .notNull()
      .references(() => outbox.id, { onDelete: 'cascade' }),
    started_at: at('started_at').notNull(),
    duration_ms: integer('duration_ms').notNull(),
    status_code: integer('status_code'),
    error: text('error'),
  },
  (t) => [index('outbox_attempts_row_idx').on(t.outbox_id)],
);
