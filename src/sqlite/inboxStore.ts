import { InboxStore } from '../inbox/inboxStore.js';
import { type StateChangeSink, stateChangeSinkOf } from '../operations/effects.js';
import type { Sqlite } from './open.js';
import { sqliteScriptStore } from './scripts.js';

/** The inbox store of a SQLite handle: its state changes go to the sink handed to the handle. */
export function sqliteInboxStore(sqlite: Sqlite): InboxStore {
  // Asked at each change: the root may hand the handle its sink after this store is made.
  const onStateChange: StateChangeSink = function* (changes) {
    const sink = stateChangeSinkOf(sqlite);
    if (sink) yield* sink(changes);
  };
  return new InboxStore(sqliteScriptStore(sqlite), { onStateChange });
}
