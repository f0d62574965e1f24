import type { Statement } from 'better-sqlite3';
import { announceAfterCommit } from '../db/changeSignal.js';
import type { Sqlite } from './open.js';
import { perHandle } from './perHandle.js';

/**
 * The one writer of the `changes` feed (internal apps tail it by `seq`). Synchronous: call it in
 * the transaction that makes the change, so a row of the feed commits with its data or not at all.
 * Once that transaction has ended, waiting readers are woken (db/changeSignal.ts).
 */

/** One row of the feed: which record of which resource changed how, and when (ISO). */
export interface ChangeRow {
  resource: string;
  recordId: string;
  kind: string;
  at: string;
}

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
