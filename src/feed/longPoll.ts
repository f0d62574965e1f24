import type { ChangeSignal } from '../db/changeSignal.js';
import type { Sqlite } from '../db/open.js';
import { perHandle } from '../db/perHandle.js';
import { type FeedEntry, type FeedQuery, readFeed } from './queries.js';

/** Runs `fn` after `ms`; returns its cancel. Injected so tests end a wait without waiting. */
export type Schedule = (ms: number, fn: () => void) => () => void;

/** The real timers. */
export const realSchedule: Schedule = (ms, fn) => {
  const timer = setTimeout(fn, ms);
  return () => clearTimeout(timer);
};

/** What one long-poll needs: the database, its change signal, the request's disconnect, the timers. */
export interface LongPollDeps {
  sqlite: Sqlite;
  signal: ChangeSignal;
  /** Aborts when the client goes away: the waiter is dropped at once. */
  disconnected: AbortSignal;
  schedule: Schedule;
}

/**
 * The entries after `q.after`; when there are none, waits up to `waitMs` for a change and reads
 * again. Woken by the commit itself (db/changeSignal.ts), not by a timer: the only timer is this
 * request's own wait. A change another resource's filter leaves out wakes it too; it reads, finds
 * nothing of its own, and waits out the rest. Empty when the wait ends with nothing new.
 */
export async function longPoll(deps: LongPollDeps, q: FeedQuery, waitMs: number): Promise<FeedEntry[]> {
  const { sqlite, signal } = deps;
  let version = signal.version;
  let rows = readFeed(sqlite, q);
  if (rows.length > 0 || waitMs <= 0 || deps.disconnected.aborted) return rows;
  const ended = new AbortController();
  const cancelTimer = deps.schedule(waitMs, () => ended.abort());
  const stop = AbortSignal.any([ended.signal, deps.disconnected]);
  try {
    while (rows.length === 0 && (await signal.whenChanged(version, stop))) {
      version = signal.version;
      rows = readAfterWake(sqlite, version, q);
    }
    return rows;
  } finally {
    cancelTimer();
  }
}

/** Per handle: the pages read since the last announcement, by query. */
const sinceWake = perHandle((_sqlite: Sqlite) => ({ version: -1, pages: new Map<string, FeedEntry[]>() }));

/**
 * One wake-up answers hundreds of waiters that mostly ask the same question (`seq > head`): the
 * first reads, the others share its page until the next announcement. Sharing is safe: seqs are
 * given in commit order, so a page read a moment earlier at the same version is still the start of
 * what follows `after`, and a commit it missed announces again.
 */
function readAfterWake(sqlite: Sqlite, version: number, q: FeedQuery): FeedEntry[] {
  const cache = sinceWake(sqlite);
  if (cache.version !== version) {
    cache.version = version;
    cache.pages.clear();
  }
  const key = `${q.after}:${q.limit}:${q.resource ?? ''}`;
  let rows = cache.pages.get(key);
  if (rows === undefined) {
    rows = readFeed(sqlite, q);
    cache.pages.set(key, rows);
  }
  return rows;
}
