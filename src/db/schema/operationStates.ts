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
