import type { Schedule } from '../common/clock.js';
import type { FeedEntry, FeedReads } from './feedReads.js';

/**
 * Where a stream's bytes go: the client's connection. Writes never wait; the stream reads how far
 * behind the client is and decides (see {@link nextMove}).
 */
export interface EventSink {
  /** Hands `chunk` to the connection; false once it holds more than it wants (until `onDrain` says). */
  write(chunk: Uint8Array): boolean;
  /** Bytes handed over that the client has not taken yet (the connection's and the socket's buffers). */
  readonly backlog: number;
  /** Calls `fn` each time the connection has taken its backlog after a write said it was full; returns the stop. */
  onDrain(fn: () => void): () => void;
  /** Ends the connection at once (a reader too far behind reconnects with Last-Event-ID). */
  close(): void;
}

/** What one event stream needs. */
export interface StreamDeps {
  /** The feed's reads and signal (shared between readers: ./pageCache.ts). */
  feed: FeedReads;
  schedule: Schedule;
  /** The heartbeat's tick, ms: a keep-alive after one to two idle ticks; a backed-up client taking nothing for as long is closed. */
  heartbeatMs: number;
  /** Entries read and written at once. */
  pageSize: number;
  /**
   * The most a backed-up client may leave untaken, bytes: past it the stream closes it. Above the
   * connection's high-water mark (64 KiB) and a page, or a client merely catching up is closed.
   */
  maxBacklogBytes: number;
  /** Aborts when the client goes away or the server stops: the stream ends. */
  ended: AbortSignal;
}

/** Why a stream ended. */
export type StreamEnd = 'ended' | 'behind' | 'stalled';

/** One server-sent event per entry: `id:` its seq (what a reconnect sends back as Last-Event-ID). */
export function formatEvents(entries: readonly FeedEntry[]): string {
  let text = '';
  for (const e of entries) text += `id: ${e.seq}\ndata: ${JSON.stringify(e)}\n\n`;
  return text;
}

/**
 * A page's events, encoded once per page: readers served the same shared page (./pageCache.ts)
 * write the same bytes, so a thousand connections hold references to one buffer, not a copy each.
 */
const encodedPages = new WeakMap<readonly FeedEntry[], Buffer>();
export function encodedEvents(entries: readonly FeedEntry[]): Buffer {
  let bytes = encodedPages.get(entries);
  if (bytes === undefined) {
    bytes = Buffer.from(formatEvents(entries));
    encodedPages.set(entries, bytes);
  }
  return bytes;
}

/** The comment line sent after `heartbeatMs` without an event, so proxies keep the connection. */
export const HEARTBEAT = ': keep-alive\n\n';
const HEARTBEAT_BYTES = Buffer.from(HEARTBEAT);

/** What the stream saw since it last acted. */
export interface StreamState {
  /** The last page read was full: more of the backlog follows at once. */
  more: boolean;
  /** A commit was announced since the last read. */
  committed: boolean;
  /** The client holds more than its connection wants (its last write said so, and it has not drained). */
  backedUp: boolean;
  /** A heartbeat tick found nothing written or taken since the one before. */
  beatDue: boolean;
  /** Bytes the client has not taken. */
  backlog: number;
}

/** What the stream does next. */
export type Move = 'read' | 'heartbeat' | 'wait' | 'wait-drain' | 'close-behind' | 'close-stalled';

/**
 * The stream's decision. A client is paced by its connection: while it is backed up the backlog is
 * not read further, so a slow reader catching up costs its buffer, not the feed. A commit is written
 * anyway, so a client slower than the feed falls behind in its buffer, and past `maxBacklog` bytes
 * is closed (it reconnects with Last-Event-ID and loses nothing). A backed-up client that took
 * nothing for a whole heartbeat interval has stalled: it is closed too, so a socket that never reads
 * holds neither memory nor a stream slot for long (closed after one to two heartbeat ticks).
 */
export function nextMove(s: StreamState, maxBacklog: number): Move {
  if (s.backedUp) {
    // Only a backed-up client is judged: pacing alone leaves at most the connection's high-water
    // mark and a page, which a fast client may hold for a moment (writes of one tick are corked).
    if (s.backlog > maxBacklog) return 'close-behind';
    return s.committed ? 'read' : s.beatDue ? 'close-stalled' : 'wait-drain';
  }
  if (s.more || s.committed) return 'read';
  return s.beatDue ? 'heartbeat' : 'wait';
}

/**
 * Streams every entry after `after` (of one resource, if given), then each new one as it commits,
 * until `deps.ended` aborts or the client is closed for being behind or stalled (the answer says
 * which). The stream starts by reading, as if woken by a commit.
 */
export async function streamFeed(
  deps: StreamDeps,
  sink: EventSink,
  from: { after: number; resource?: string | undefined },
): Promise<StreamEnd> {
  const { feed, ended } = deps;
  const signal = feed.signal;
  let after = from.after;
  const state: StreamState = { more: true, committed: false, backedUp: false, beatDue: false, backlog: 0 };
  // One set of functions per stream, reused by every wait: a thousand streams woken by each commit
  // allocate a promise each, not timers, controllers and listeners (garbage that outlives a
  // scavenge and swelled the old space by ~200 MB under load).
  let resume: (() => void) | undefined;
  const wakeUp = () => {
    const r = resume;
    resume = undefined;
    r?.();
  };
  const committed = () => {
    state.committed = true;
    wakeUp();
  };
  // The heartbeat ticks every interval: a tick with nothing written or taken since the last one
  // makes it due (so a keep-alive comes after one to two idle intervals, and a backed-up client
  // that took nothing for as long has stalled). One timer per interval, not one per write.
  let active = false;
  let cancelTick: () => void = () => {};
  const tick = () => {
    if (!active) state.beatDue = true;
    active = false;
    cancelTick = deps.schedule(deps.heartbeatMs, tick);
    wakeUp();
  };
  cancelTick = deps.schedule(deps.heartbeatMs, tick);
  const send = (chunk: Uint8Array) => {
    state.backedUp = !sink.write(chunk);
    state.beatDue = false;
    active = true;
  };
  const onDrain = () => {
    state.backedUp = false;
    active = true;
    wakeUp();
  };
  const stopDrain = sink.onDrain(onDrain);
  ended.addEventListener('abort', wakeUp);
  try {
    while (!ended.aborted) {
      const version = signal.version;
      state.backlog = sink.backlog;
      const move = nextMove(state, deps.maxBacklogBytes);
      if (move === 'close-behind' || move === 'close-stalled') {
        sink.close();
        return move === 'close-behind' ? 'behind' : 'stalled';
      }
      if (move === 'read') {
        state.committed = false;
        const rows = await feed.read({ after, limit: deps.pageSize, resource: from.resource });
        state.more = rows.length >= deps.pageSize;
        if (rows.length === 0 || ended.aborted) continue;
        send(encodedEvents(rows));
        after = rows[rows.length - 1]!.seq;
      } else if (move === 'heartbeat') {
        send(HEARTBEAT_BYTES);
      } else {
        await new Promise<void>((resolve) => {
          resume = resolve;
          signal.park(version, committed);
        });
        signal.unpark(committed);
      }
    }
    return 'ended';
  } finally {
    cancelTick();
    stopDrain();
    ended.removeEventListener('abort', wakeUp);
  }
}
