import { appendFeed, type ChangeRow, type Script } from '../store/script.js';
import type { StateChange, StateChangeSink } from './effects.js';
import type { OperationState } from './states.js';

/**
 * The one place every state change of an operation passes, inside the transaction that makes it,
 * on both stores. What must commit with a state change goes here (and only here): the change
 * feed's `resource = 'operations'` rows, then, in one call, what the sink the root handed in
 * writes (effects.ts: the subscribers' deliveries). Both commit together, so their order within
 * the transaction is nobody's concern.
 */
export function* stateChanged(
  changes: readonly StateChange[],
  sink: StateChangeSink | undefined,
): Script<void> {
  if (changes.length === 0) return;
  yield* appendFeed(feedRows(changes));
  if (sink) yield* sink(changes);
}

/**
 * The change feed's rows for these changes: `kind` = the new state, as the outside sees it.
 * `sending` is internal (a claim, a requeue after a failed attempt, a release are no change to an
 * app: the row stays queued), so the hot path of claims adds no row and no write.
 */
export function feedRows(changes: readonly StateChange[]): ChangeRow[] {
  const rows: ChangeRow[] = [];
  for (const c of changes) {
    const to = visible(c.to);
    if (c.from === null || visible(c.from) !== to) {
      rows.push({ resource: 'operations', recordId: c.ref, kind: to, at: c.at });
    }
  }
  return rows;
}

/** A state as apps see it: `sending` is still `queued` to them. */
const visible = (state: OperationState): OperationState => (state === 'sending' ? 'queued' : state);
