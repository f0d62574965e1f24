import type { FeedEntry, FeedQuery, FeedReads } from './feedReads.js';

/**
 * Pages of the change feed shared between its readers, above the store seam (SQLite and PostgreSQL
 * alike). A thousand event streams and long-polls mostly ask the same questions: "after the head"
 * when a commit wakes them, "after 0, 100, 200..." while they catch up. Each question is read from
 * the store once and its answer (the same array, hence the same encoded events, see ./stream.ts)
 * served to every reader who asks it, instead of a query and a copy of the page per reader.
 *
 * Two kinds of answer, two lifetimes:
 * - A full page (`limit` rows) never changes: seqs are given in commit order (on SQLite by its one
 *   writer, on PostgreSQL by the feed's single-writer lock, postgres/changes.ts) and the feed is never
 *   pruned, so no row can later appear inside it. Kept in a small LRU, whatever happened since.
 * - A short page (the head of the feed) is shared only between readers of the same announcement
 *   (the signal's version when the read began): it sees every commit announced up to it, and a
 *   commit it missed announces again, which starts a new version whose readers read afresh. The
 *   version is this process's: each replica shares only its own reads.
 * A read that fails is not shared with later askers.
 */

/** Full pages kept (about 100 entries each, a few tens of KB with their encoding). */
export const SHARED_FULL_PAGES = 64;

type Answer = FeedEntry[] | Promise<FeedEntry[]>;

function keyOf(q: FeedQuery): string {
  return `${q.after}:${q.limit}:${q.resource ?? ''}`;
}

/**
 * `inner` with its reads shared as above; the head too, per announcement (a caller that also holds
 * rows takes the larger of the two: rows read later in the same version may pass a shared head).
 */
export function sharedFeedReads(inner: FeedReads, fullPages = SHARED_FULL_PAGES): FeedReads {
  const full = new Map<string, FeedEntry[]>();
  const short = new Map<string, Answer>();
  let shortVersion = -1;
  let head: { version: number; answer: number | Promise<number> } | undefined;

  const keepFull = (key: string, rows: FeedEntry[]) => {
    full.delete(key);
    full.set(key, rows);
    if (full.size > fullPages) full.delete(full.keys().next().value as string);
  };
  /** Files a settled answer: a full page for good, a short one for its version only. */
  const settle = (key: string, q: FeedQuery, rows: FeedEntry[], answer: Answer) => {
    if (rows.length >= q.limit) {
      keepFull(key, rows);
      if (short.get(key) === answer) short.delete(key);
    }
  };

  return {
    signal: inner.signal,
    head() {
      const version = inner.signal.version;
      if (head?.version === version) return head.answer;
      const answer = inner.head();
      const mine = { version, answer };
      head = mine;
      if (typeof answer !== 'number')
        answer.catch(() => {
          if (head === mine) head = undefined;
        });
      return answer;
    },
    read(q) {
      const key = keyOf(q);
      const kept = full.get(key);
      if (kept !== undefined) {
        keepFull(key, kept);
        return kept;
      }
      const version = inner.signal.version;
      if (shortVersion !== version) {
        shortVersion = version;
        short.clear();
      }
      const shared = short.get(key);
      if (shared !== undefined) return shared;
      const answer = inner.read(q);
      short.set(key, answer);
      if (Array.isArray(answer)) settle(key, q, answer, answer);
      else
        answer.then(
          (rows) => settle(key, q, rows, answer),
          () => {
            if (short.get(key) === answer) short.delete(key);
          },
        );
      return answer;
    },
  };
}
