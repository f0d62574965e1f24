import { FEED_HEAD, type FeedReads, feedPage, type StoredChange, toChange } from '../feed/feedReads.js';
import { changeSignalFor } from '../sqlite/changes.js';
import type { Sqlite } from '../sqlite/open.js';
import { perHandle } from '../sqlite/perHandle.js';
import { runSqlite } from '../sqlite/scripts.js';

/** The newest seq in the feed of `sqlite` (0 when empty), read now. */
export function feedHead(sqlite: Sqlite): number {
  return Number(runSqlite(sqlite, FEED_HEAD).rows[0]?.head ?? 0);
}

/**
 * SQLite's feed reads: one per database handle, synchronous (no promise on the feed's hot path),
 * woken by the handle's own signal.
 */
export const sqliteFeedReads = perHandle(
  (sqlite: Sqlite): FeedReads => ({
    signal: changeSignalFor(sqlite),
    read: (q) => (runSqlite(sqlite, feedPage(q)).rows as unknown as StoredChange[]).map(toChange),
    head: () => feedHead(sqlite),
  }),
);
