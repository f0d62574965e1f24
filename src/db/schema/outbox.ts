import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { OPERATION_STATES } from './operationStates.js';

/** One row per operation the marketplace queued for `/notify`. */
export const outbox = sqliteTable(
  'outbox',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    marketplaceTransactionRef: text('marketplaceTransactionRef').notNull().unique(),
    operationType: text('operationType').notNull(),
    /** Operations with the same key (unit or issuance) leave in queue order. */
    order_key: text('order_key'),
    /** The notification exactly as it is sent, on every attempt. */
    body: text('body').notNull(),
    /** Hash of the enqueued input, to tell a repeated enqueue from a conflicting one. */
    body_hash: text('body_hash').notNull(),
    /** One of OPERATION_STATES (operationStates.ts); typed only, no CHECK constraint. */
    state: text('state', { enum: OPERATION_STATES }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    next_attempt_at: text('next_attempt_at').notNull(),
    lease_owner: text('lease_owner'),
    lease_until: text('lease_until'),
    last_error: text('last_error'),
    last_status: integer('last_status'),
    /** The operator's answer to the accepted attempt. */
    response: text('response'),
    decision_reason: text('decision_reason'),
    created_at: text('created_at').notNull(),
    updated_at: text('updated_at').notNull(),
    accepted_at: text('accepted_at'),
    decided_at: text('decided_at'),
    /** When the row reached a final state (approved, rejected, failed, cancelled). */
    finished_at: text('finished_at'),
    /** When its personal fields were scrubbed. */
    scrubbed_at: text('scrubbed_at'),
    /** When a person last moved it from `failed` back to `queued`; max_age_hours counts from here. */
    retried_at: text('retried_at'),
  },
  (t) => [
    index('outbox_due_idx').on(t.state, t.next_attempt_at),
    index('outbox_order_idx').on(t.order_key, t.id),
    // Claims walk one state in id order and stop at the limit, instead of sorting every due row.
    index('outbox_state_id_idx').on(t.state, t.id),
  ],
);

/** Every delivery attempt of an outbox row. */
export const outboxAttempts = sqliteTable(
  'outbox_attempts',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    outbox_id: integer('outbox_id')
      .notNull()
      .references(() => outbox.id, { onDelete: 'cascade' }),
    started_at: text('started_at').notNull(),
    duration_ms: integer('duration_ms').notNull(),
    status_code: integer('status_code'),
    error: text('error'),
  },
  (t) => [index('outbox_attempts_row_idx').on(t.outbox_id)],
);
