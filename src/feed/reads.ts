import type { ChangeSignal } from '../db/changeSignal.js';
import { changeSignalFor } from '../db/changeSignal.js';
import type { Sqlite } from '../db/open.js';
import { perHandle } from '../db/perHandle.js';
import { type FeedEntry, type FeedQuery, feedHead, readFeed } from './queries.js';

/**
 * What the feed's routes (long-poll, event stream) read, whatever the store: a page after a seq,
 * the head, and the {@link ChangeSignal} that says the feed grew. SQLite's reads are synchronous
 * and answer plain values (no promise, no extra tick on the hot path); PostgreSQL's answer promises
 * (./pgQueries.ts). Callers `await` either. The routes share these reads between their readers
 * above this seam (./pageCache.ts), whatever the store.
 */
export interface FeedReads {
  /** Announced after each commit that appended to the feed (on PostgreSQL, by LISTEN/NOTIFY). */
  readonly signal: ChangeSignal;
  /** The entries after `q.after`, oldest first, read now. */
  read(q: FeedQuery): FeedEntry[] | Promise<FeedEntry[]>;
  /** The newest seq in the feed (0 when empty). */
  head(): number | Promise<number>;
}

/** SQLite's feed reads: one per database handle, woken by the handle's own signal. */
export const sqliteFeedReads = perHandle((sqlite: Sqlite): FeedReads => {
  return {
    signal: changeSignalFor(sqlite),
    read: (q) => readFeed(sqlite, q),
    head: () => feedHead(sqlite),
  };
});
