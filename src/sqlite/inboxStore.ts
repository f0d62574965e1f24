import { InboxStore } from '../inbox/inboxStore.js';
import type { StateChangeSink } from '../operations/effects.js';
import { stateChangeSinkOf } from './changes.js';
import { commitQueueFor } from './commitQueue.js';
import type { Sqlite } from './open.js';

/** The inbox store of a SQLite handle: its state changes go to the sink handed to the handle. */
export function sqliteInboxStore(sqlite: Sqlite): InboxStore {
  // Asked at each change: the root may hand the handle its sink after this store is made.
  const onStateChange: StateChangeSink = function* (changes) {
    const sink = stateChangeSinkOf(sqlite);
    if (sink) yield* sink(changes);
  };
  return new InboxStore(commitQueueFor(sqlite), { onStateChange });
}
