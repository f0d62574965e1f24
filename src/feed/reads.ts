import type { ChangeSignal } from '../db/changeSignal.js';
import { changeSignalFor } from '../db/changeSignal.js';
import type { Sqlite } from '../db/open.js';
import { perHandle } from '../db/perHandle.js';
import { type FeedEntry, type FeedQuery, feedHead, readFeed } from './queries.js';

/**
 * What the feed's routes (long-poll, event stream) read, whatever the store: a page after a seq,
 * the head, and the {@link ChangeSignal} that says the feed grew. SQLite's reads are synchronous
 * and answer plain values (no promise, no extra tick on the hot path); PostgreSQL's answer promises
 * (./pgQueries.ts). Callers `await` either.
 */
export interface FeedReads {
  /** Announced after each commit that appended to the feed (on PostgreSQL, by LISTEN/NOTIFY). */
  readonly signal: ChangeSignal;
  /** The entries after `q.after`, oldest first, read now. */
  read(q: FeedQuery): FeedEntry[] | Promise<FeedEntry[]>;
  /**
   * The same, for a reader woken by announcement `version` (its {@link ChangeSignal.version} taken
   * after the wake): readers of one version asking the same question share one read.
   */
  readAfterWake(version: number, q: FeedQuery): FeedEntry[] | Promise<FeedEntry[]>;
  /** The newest seq in the feed (0 when empty). */
  head(): number | Promise<number>;
}

/**
 * One wake-up answers hundreds of waiters that mostly ask the same question (`seq > head`): the
 * first reads, the others share its page (or, on PostgreSQL, its read in flight) until the next
 * announcement. Sharing is safe only between readers of the same version: the read began after
 * that announcement, so it sees every commit announced up to it; seqs are given in commit order
 * (on PostgreSQL by the feed's single-writer lock, db/pgChanges.ts), so what it read is still the
 * start of what follows `after`; and a commit it missed announces again, which starts a new version
 * whose readers read afresh. The version is this process's: each replica shares only its own reads.
 */
export interface WakeCache<T> {
  /** The shared answer of version `version` to `q`, read by `read` when it is the first asker. */
  get(version: number, q: FeedQuery): T;
  /** Drops `answer` to `q` if it is still the shared one (a failed read is not shared with later askers). */
  forget(version: number, q: FeedQuery, answer: T): void;
}

export function wakeCache<T>(read: (q: FeedQuery) => T): WakeCache<T> {
  let cached = -1;
  const pages = new Map<string, T>();
  const keyOf = (q: FeedQuery) => `${q.after}:${q.limit}:${q.resource ?? ''}`;
  return {
    get(version, q) {
      if (cached !== version) {
        cached = version;
        pages.clear();
      }
      const key = keyOf(q);
      let page = pages.get(key);
      if (page === undefined) {
        page = read(q);
        pages.set(key, page);
      }
      return page;
    },
    forget(version, q, answer) {
      const key = keyOf(q);
      if (cached === version && pages.get(key) === answer) pages.delete(key);
    },
  };
}

/** SQLite's feed reads: one per database handle, woken by the handle's own signal. */
export const sqliteFeedReads = perHandle((sqlite: Sqlite): FeedReads => {
  const afterWake = wakeCache((q: FeedQuery) => readFeed(sqlite, q));
  return {
    signal: changeSignalFor(sqlite),
    read: (q) => readFeed(sqlite, q),
    readAfterWake: (version, q) => afterWake.get(version, q),
    head: () => feedHead(sqlite),
  };
});
