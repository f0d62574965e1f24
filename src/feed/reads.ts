import type { ChangeSignal } from '../db/changeSignal.js';
import { changeSignalFor } from '../sqlite/changes.js';
import type { Sqlite } from '../sqlite/open.js';
import { perHandle } from '../sqlite/perHandle.js';
import type { ScriptStore } from '../store/script.js';
import {
  FEED_HEAD,
  type FeedEntry,
  type FeedQuery,
  feedHead,
  feedPage,
  readFeed,
  type StoredChange,
  toChange,
} from './queries.js';

/**
 * What the feed's routes (long-poll, event stream) read, whatever the store: a page after a seq,
 * the head, and the {@link ChangeSignal} that says the feed grew. The statements are ./queries.ts's,
 * one each. SQLite's reads run them synchronously and answer plain values (no promise, no extra
 * tick on the hot path); a store's {@link feedReads} answers promises. Callers `await` either. The
 * routes share these reads between their readers above this seam (./pageCache.ts).
 */
export interface FeedReads {
  /** Announced after each commit that appended to the feed (on PostgreSQL, by LISTEN/NOTIFY). */
  readonly signal: ChangeSignal;
  /** The entries after `q.after`, oldest first, read now. */
  read(q: FeedQuery): FeedEntry[] | Promise<FeedEntry[]>;
  /** The newest seq in the feed (0 when empty). */
  head(): number | Promise<number>;
}

/**
 * The feed's reads through a store, woken by `signal` (on PostgreSQL this process's LISTEN feeds
 * it, postgres/changeListener.ts `listenForChanges`: every replica's commits announce on it).
 */
export function feedReads(store: ScriptStore, signal: ChangeSignal): FeedReads {
  return {
    signal,
    read: async (q) => (await store.read<StoredChange>(feedPage(q))).map(toChange),
    head: async () => Number((await store.read<{ head: number }>(FEED_HEAD))[0]?.head ?? 0),
  };
}

/** SQLite's feed reads: one per database handle, synchronous, woken by the handle's own signal. */
export const sqliteFeedReads = perHandle((sqlite: Sqlite): FeedReads => {
  return {
    signal: changeSignalFor(sqlite),
    read: (q) => readFeed(sqlite, q),
    head: () => feedHead(sqlite),
  };
});
