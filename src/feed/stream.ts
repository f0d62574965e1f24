import type { Schedule } from './longPoll.js';
import type { FeedEntry } from './queries.js';
import type { FeedReads } from './reads.js';

/** Where a stream's text goes; `write` resolves once the client's connection has taken it. */
export interface EventSink {
  write(text: string): Promise<void>;
}

/** What one event stream needs. */
export interface StreamDeps {
  /** The feed's reads and signal. */
  feed: FeedReads;
  schedule: Schedule;
  /** Idle time before a `: keep-alive` comment, ms. */
  heartbeatMs: number;
  /** Entries read and written at once: a slow client holds at most about one page in memory. */
  pageSize: number;
  /** Aborts when the client goes away or the server stops: the stream ends. */
  ended: AbortSignal;
}

/** One server-sent event per entry: `id:` its seq (what a reconnect sends back as Last-Event-ID). */
export function formatEvents(entries: readonly FeedEntry[]): string {
  let text = '';
  for (const e of entries) text += `id: ${e.seq}\ndata: ${JSON.stringify(e)}\n\n`;
  return text;
}

/** The comment line sent after `heartbeatMs` without an event, so proxies keep the connection. */
export const HEARTBEAT = ': keep-alive\n\n';

/**
 * Streams every entry after `after` (of one resource, if given), then each new one as it commits,
 * until `deps.ended` aborts. Backpressure: the next page is read from the database only after the
 * previous write has been taken by the connection, so a slow reader costs one page, not the feed.
 */
export async function streamFeed(
  deps: StreamDeps,
  sink: EventSink,
  from: { after: number; resource?: string | undefined },
): Promise<void> {
  const { feed, ended } = deps;
  const signal = feed.signal;
  let after = from.after;
  const arm = () => {
    const beat = new AbortController();
    const cancel = deps.schedule(deps.heartbeatMs, () => beat.abort());
    return { due: beat.signal, cancel };
  };
  let beat = arm();
  try {
    while (!ended.aborted) {
      const version = signal.version;
      const rows = await feed.read({ after, limit: deps.pageSize, resource: from.resource });
      if (rows.length > 0) {
        await sink.write(formatEvents(rows));
        after = rows[rows.length - 1]!.seq;
      } else if (beat.due.aborted) {
        await sink.write(HEARTBEAT);
      } else {
        await signal.whenChanged(version, AbortSignal.any([beat.due, ended]));
        continue;
      }
      // Something was written: the connection is alive, the next heartbeat is one interval away.
      beat.cancel();
      beat = arm();
    }
  } finally {
    beat.cancel();
  }
}
