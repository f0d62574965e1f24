import type { Script } from '../store/script.js';
import type { OperationState } from './states.js';

/**
 * Where an operation's state changes go besides the change feed: a sink the composition root hands
 * to the stores (src/app/), implemented above them (the subscribers' deliveries,
 * subscribers/deliverySinks.ts). The stores call it inside the transaction that makes the change, so
 * what it writes commits with the change or not at all; they never import who listens ("effects flow down", .dependency-cruiser.cjs).
 */

/** One state change of one operation, as it commits. */
export interface StateChange {
  ref: string;
  /** null when the operation is created. */
  from: OperationState | null;
  to: OperationState;
  /** When (ISO). */
  at: string;
}

/**
 * The sink, written once for both stores: a script (store/script.ts) run inside the change's
 * transaction, so its writes commit with the change on SQLite (synchronously, in the group
 * commit's job) and on PostgreSQL (in the same transaction) alike.
 */
export type StateChangeSink = (changes: readonly StateChange[]) => Script<void>;
