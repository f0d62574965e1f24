import { type ColumnKinds, type ColumnTypes, index, partialIndex, table } from './kinds.js';
import { type OperationState, UNSENT_SQL } from './operationStates.js';

/**
 * How a row waiting to be sent is retried and leased: the same columns, in the same order, on
 * `outbox` (operations for `/notify`) and `deliveries` (events for subscribers).
 */
export const sendingColumns = <C extends ColumnTypes>(k: ColumnKinds<C>) => ({
  attempts: k.count(),
  next_attempt_at: k.at().notNull(),
  lease_owner: k.text(),
  lease_until: k.at(),
  /** The last failure, masked. */
  last_error: k.text(),
  last_status: k.int(),
});

/** One row per operation the marketplace queued for `/notify`. */
export const outboxTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  table(
    'outbox',
    {
      id: k.rowId(),
      marketplaceTransactionRef: k.uniqueText(),
      operationType: k.text().notNull(),
      /** Operations with the same key (unit or issuance) leave in queue order. */
      order_key: k.text(),
      /** The notification exactly as it is sent, on every attempt (text: the bytes must not change). */
      body: k.text().notNull(),
      /** Hash of the enqueued input, to tell a repeated enqueue from a conflicting one. */
      body_hash: k.text().notNull(),
      /** One of OPERATION_STATES (operationStates.ts). */
      state: k.state<OperationState>(),
      ...sendingColumns(k),
      /** The operator's answer to the accepted attempt. */
      response: k.text(),
      decision_reason: k.text(),
      created_at: k.at().notNull(),
      updated_at: k.at().notNull(),
      accepted_at: k.at(),
      decided_at: k.at(),
      /** When the row reached a final state (approved, rejected, failed, cancelled). */
      finished_at: k.at(),
      /** When its personal fields were scrubbed. */
      scrubbed_at: k.at(),
      /** When a person last moved it from `failed` back to `queued`; max_age_hours counts from here. */
      retried_at: k.at(),
    },
    {
      indexes: [
        // When the next queued row falls due (the dispatcher's idle sleep), for queued rows only: a
        // full (state, next_attempt_at) index was rewritten by every claim and settle (a row's two
        // transitions, four index writes) to serve that one read; this one is written once when a row
        // is queued and once when it leaves the queue.
        partialIndex('outbox_queued_due_idx', "state = 'queued'", 'next_attempt_at'),
        // Per-key order: whether a row has an older unsettled row on its key is one probe here,
        // whatever the key's settled history (a full (order_key, id) index made every claim of a
        // key's next row walk that history). Settled rows are not in it.
        partialIndex('outbox_unsettled_key_idx', `state IN ${UNSENT_SQL}`, 'order_key', 'id'),
        // Claims walk one state in id order and stop at the limit, instead of sorting every due row.
        index('outbox_state_id_idx', 'state', 'id'),
      ],
    },
  );

/** Every delivery attempt of an outbox row. */
export const outboxAttemptsTable = <C extends ColumnTypes>(k: ColumnKinds<C>, outboxId: () => C['column']) =>
  table(
    'outbox_attempts',
    {
      id: k.rowId(),
      outbox_id: k.reference(outboxId, 'cascade').notNull(),
      started_at: k.at().notNull(),
      duration_ms: k.int().notNull(),
      status_code: k.int(),
      error: k.text(),
    },
    { indexes: [index('outbox_attempts_row_idx', 'outbox_id')] },
  );
