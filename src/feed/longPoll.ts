import type { Schedule } from '../common/clock.js';
import type { FeedEntry, FeedQuery, FeedReads } from './feedReads.js';

// The timers live in clock.ts, below every folder that waits (health's readiness waits too).

/** What one long-poll needs: the feed's reads and signal, the request's disconnect, the timers. */
export interface LongPollDeps {
  feed: FeedReads;
  /** Aborts when the client goes away: the waiter is dropped at once. */
  disconnected: AbortSignal;
  schedule: Schedule;
}

/**
 * The entries after `q.after`; when there are none, waits up to `waitMs` for a change and reads
 * again. Woken by the commit itself (db/changeSignal.ts; on PostgreSQL by its NOTIFY), not by a
 * timer: the only timer is this request's own wait. A change another resource's filter leaves out
 * wakes it too; it reads, finds nothing of its own, and waits out the rest. Empty when the wait
 * ends with nothing new. The version is taken before each read, so a commit announced while a read
 * is in flight wakes the next wait at once.
 */
export async function longPoll(deps: LongPollDeps, q: FeedQuery, waitMs: number): Promise<FeedEntry[]> {
  const { feed } = deps;
  const signal = feed.signal;
  let version = signal.version;
  let rows = await feed.read(q);
  if (rows.length > 0 || waitMs <= 0 || deps.disconnected.aborted) return rows;
  // One controller for the wait's two ends, linked by a listener removed after: AbortSignal.any
  // would register each long-poll with the long-lived signal it follows, garbage that outlives it.
  const ended = new AbortController();
  const end = () => ended.abort();
  const cancelTimer = deps.schedule(waitMs, end);
  deps.disconnected.addEventListener('abort', end);
  try {
    while (rows.length === 0 && (await signal.whenChanged(version, ended.signal))) {
      version = signal.version;
      rows = await feed.read(q);
    }
    return rows;
  } finally {
    cancelTimer();
    deps.disconnected.removeEventListener('abort', end);
  }
}

/**
 * A long-poll's answer, `{"items":[...],"last":N,"head":N}` (what JSON.stringify gives), with the
 * items encoded once per page: the 500 long-polls a commit answers hold the same shared page
 * (./pageCache.ts), so they share its JSON instead of stringifying it each.
 */
const encodedItems = new WeakMap<readonly FeedEntry[], string>();
export function longPollAnswer(items: readonly FeedEntry[], last: number, head: number): string {
  let json = encodedItems.get(items);
  if (json === undefined) {
    json = JSON.stringify(items);
    encodedItems.set(items, json);
  }
  return `{"items":${json},"last":${JSON.stringify(last)},"head":${JSON.stringify(head)}}`;
}
