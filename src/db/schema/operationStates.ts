/**
 * Every state of an operation, in the order of its life (the one list): the `outbox.state`
 * column's type. The transitions between them are operations/states.ts (which re-exports this).
 */
export const OPERATION_STATES = [
  'queued',
  'sending',
  'accepted',
  'approved',
  'rejected',
  'failed',
  'cancelled',
] as const;

export type OperationState = (typeof OPERATION_STATES)[number];

/**
 * States in which the operation still waits to reach the operator (queued, or leased and sending):
 * a row of an order key waits while an older row of its key is in one of them. Here, below the
 * transitions (operations/states.ts re-exports it), because the partial index
 * `outbox_unsettled_key_idx` is defined by it.
 */
export const UNSENT_STATES: readonly OperationState[] = ['queued', 'sending'];

/**
 * {@link UNSENT_STATES} as an SQL list: the one spelling that the claim's per-key test and the
 * partial index share (a planner uses a partial index only for a query whose terms repeat its
 * condition).
 */
export const UNSENT_SQL = `(${UNSENT_STATES.map((s) => `'${s}'`).join(', ')})`;
