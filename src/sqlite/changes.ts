import type { Statement } from 'better-sqlite3';
import { ChangeSignal } from '../db/changeSignal.js';
import type { StateChangeSink } from '../operations/effects.js';
import type { ChangeRow } from '../store/script.js';
import type { Sqlite } from './open.js';
import { perHandle } from './perHandle.js';

/**
 * What a commit on a SQLite handle tells others: the one writer of the `changes` feed (internal
 * apps tail it by `seq`), the handle's change signal that wakes the feed's readers once the rows
 * are committed and durable, and the handle's state-change sink. recordChanges is synchronous:
 * call it in the transaction that makes the change, so a row of the feed commits with its data or
 * not at all.
 */

const insert = perHandle(
  (sqlite: Sqlite) =>
    sqlite.prepare('INSERT INTO changes (resource, record_id, kind, at) VALUES (?, ?, ?, ?)') as Statement<
      [string, string, string, string]
    >,
);

/** Appends the rows to the feed, in order. */
export function recordChanges(sqlite: Sqlite, rows: ReadonlyArray<ChangeRow>): void {
  if (rows.length === 0) return;
  const st = insert(sqlite);
  let seq = 0;
  for (const row of rows) seq = Number(st.run(row.resource, row.recordId, row.kind, row.at).lastInsertRowid);
  announceAfterCommit(sqlite, seq);
}

/** The signal of a database handle: what the one `changes` writer announces on. */
export const changeSignalFor = perHandle((_sqlite: Sqlite) => new ChangeSignal());

/**
 * Per handle: the fsync the group commit runs off the loop (./walSync.ts) for what it just
 * committed. Readers are woken only once it is done, so no app learns of a row that a power loss
 * could still take back (and a long-poll answers after the writer's own 201, not before). A failed
 * fsync wakes them too: a spurious wake costs a query.
 */
export const durability = perHandle((_sqlite: Sqlite) => ({ pending: null as Promise<void> | null }));

/** Per handle: the highest seq written since the last announcement, or null when none is pending. */
const pending = perHandle((_sqlite: Sqlite) => ({ seq: null as number | null }));

/**
 * Announces `seq` once the transaction that wrote it has ended. better-sqlite3 transactions are
 * synchronous, so when the microtask runs the writer's transaction has committed (or rolled back:
 * then the wake is spurious and harmless). Many rows written in one transaction make one
 * announcement. A transaction still open then (a hand-made BEGIN spanning awaits) is waited out.
 */
export function announceAfterCommit(sqlite: Sqlite, seq: number): void {
  const slot = pending(sqlite);
  const first = slot.seq === null;
  slot.seq = Math.max(slot.seq ?? 0, seq);
  if (!first) return;
  const flush = () => {
    if (!sqlite.open) return;
    if (sqlite.inTransaction) {
      setImmediate(flush);
      return;
    }
    const upTo = slot.seq ?? seq;
    slot.seq = null;
    const durable = durability(sqlite).pending;
    if (durable) void durable.then(() => changeSignalFor(sqlite).announce(upTo));
    else changeSignalFor(sqlite).announce(upTo);
  };
  queueMicrotask(flush);
}

const sinks = new WeakMap<Sqlite, StateChangeSink>();

/**
 * Hands this handle its state-change sink (operations/effects.ts): every state change committed
 * through it calls `sink` (none: changes reach only the feed). Set where the handle is opened, by
 * the root that opens it, in every process and thread that may change an operation.
 */
export function useStateChangeSink(sqlite: Sqlite, sink: StateChangeSink | undefined): void {
  if (sink) sinks.set(sqlite, sink);
  else sinks.delete(sqlite);
}

/** The sink of this handle, if one was handed to it. */
export function stateChangeSinkOf(sqlite: Sqlite): StateChangeSink | undefined {
  return sinks.get(sqlite);
}
