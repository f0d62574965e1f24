import type { IncomingMessage, ServerResponse } from 'node:http';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Context, Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { z } from 'zod';
import { realSchedule, type Schedule } from '../common/clock.js';
import { errorMessage } from '../common/errors.js';
import type { AppContext } from '../context.js';
import { BUSY_RETRY_AFTER_SECONDS, OpenSlots } from '../feed/admission.js';
import type { FeedReads } from '../feed/feedReads.js';
import { longPoll, longPollAnswer } from '../feed/longPoll.js';
import { sharedFeedReads } from '../feed/pageCache.js';
import { streamFeed } from '../feed/stream.js';
import { decimalParam, limitParam, parseQuery, type RouteSpec } from './routeSpec.js';
import { changesPage } from './schemas/mirror.js';
import { nodeEventSink } from './sseResponse.js';

/** The change feed over HTTP: a page (optionally long-polled) and a server-sent event stream. */

/** Longest `wait` a long-poll may ask for, seconds. */
export const MAX_WAIT_SECONDS = 60;
/** The event stream's heartbeat tick, ms: a `: keep-alive` comment after one to two idle ticks. */
export const HEARTBEAT_MS = 15_000;
/** Entries an event stream reads and writes at once (the page its readers share). */
export const STREAM_PAGE = 100;

const afterParam = decimalParam(0).optional().describe('last seq already seen (default: 0, from the start)');
const resourceParam = z
  .string()
  .min(1)
  .optional()
  .describe(
    'only changes of this resource (projects, issuances, unit_operations, custody_*, operations, schema_changes, reconciliation_findings)',
  );

const changesQuery = z.strictObject({
  after: afterParam,
  limit: limitParam,
  resource: resourceParam,
  wait: decimalParam(0, MAX_WAIT_SECONDS)
    .optional()
    .describe(
      `seconds to wait, 0-${MAX_WAIT_SECONDS}, when nothing follows \`after\` yet: the answer comes as soon as a change commits, or empty when the wait ends (default: 0)`,
    ),
});

const streamQuery = z.strictObject({ after: afterParam, resource: resourceParam });

/** The route specs of this file, for /openapi.json. */
export const FEED_ROUTE_SPECS: RouteSpec[] = [
  {
    method: 'get',
    path: '/v1/changes',
    operationId: 'listChanges',
    summary:
      'The change feed after a seq: mirror inserts, updates and removals, and operations entering a state; long-polls with wait',
    query: changesQuery,
    responses: {
      '200': { description: 'call again with after=last', schema: changesPage },
      '503': 'api.max_long_polls long-polls are waiting: ask again after Retry-After',
    },
  },
  {
    method: 'get',
    path: '/v1/changes/stream',
    operationId: 'streamChanges',
    summary:
      'The change feed as server-sent events (id: seq, data: the change as JSON) from after, or from the Last-Event-ID header, which wins; a `: keep-alive` comment after 15-30 s idle; a client too far behind (api.stream_buffer_bytes) or stalled is closed and resumes with Last-Event-ID',
    query: streamQuery,
    produces: 'text/event-stream',
    responses: {
      '200': {
        description: 'one event per change, open until the client leaves',
        contentType: 'text/event-stream',
      },
      '400': 'a bad after, resource or Last-Event-ID, named in the error',
      '503': 'api.max_streams streams are open: ask again after Retry-After',
    },
  },
];

/** Where the feed is read, and what tests replace: the timers, the heartbeat interval, the server's stop. */
export interface FeedRouteOptions {
  /** The store's feed reads and signal. */
  feed: FeedReads;
  /** (default: real timers) */
  schedule?: Schedule;
  /** (default: {@link HEARTBEAT_MS}) */
  heartbeatMs?: number;
  /** Aborts when the API stops: waits answer at once and streams end (default: never). */
  closing?: AbortSignal;
}

const lastEventId = decimalParam(0);

/** The seq a stream starts after: Last-Event-ID (a browser's reconnect sends it) over `after`. */
function streamStart(header: string | undefined, after: number | undefined): number {
  if (header === undefined) return after ?? 0;
  const parsed = lastEventId.safeParse(header.trim());
  if (!parsed.success)
    throw new HTTPException(400, { message: 'Last-Event-ID: expected a seq (plain decimal integer)' });
  return parsed.data;
}

/** The 503 of a full house: which limit, and when to ask again. */
function busy(c: Context, what: string, key: string, max: number): Response {
  return c.json({ error: `${max} ${what} are open (${key}): ask again later` }, 503, {
    'retry-after': String(BUSY_RETRY_AFTER_SECONDS),
  });
}

/** Node's response under Hono's, when the app runs on @hono/node-server (absent in `app.request()`). */
function nodeResponse(c: Context): ServerResponse<IncomingMessage> | undefined {
  return (c.env as { outgoing?: ServerResponse<IncomingMessage> } | undefined)?.outgoing;
}

/**
 * The API's stop, fanned out to the feed's open requests from one listener on `closing`: a Set
 * entry per request, not an EventTarget listener each (Node's addEventListener walks the signal's
 * listeners for a duplicate, so 1,500 open requests made each new one pay for all the others).
 */
function stopFanout(closing: AbortSignal): Set<() => void> {
  const stops = new Set<() => void>();
  const stopAll = () => {
    for (const stop of [...stops]) stop();
    stops.clear();
  };
  // Already stopped: clientGone aborts each request itself.
  if (!closing.aborted) closing.addEventListener('abort', stopAll, { once: true });
  return stops;
}

/** The abort reason of every feed request: `abort()` without one builds a DOMException (a stack) per request. */
const CLIENT_GONE = new Error('the client went away or the API stopped');

/**
 * Aborts when the client goes away or the API stops; `unlink` lets go of both. From Node's response
 * when there is one: `c.req.raw.signal` would build a whole web Request per waiting client just to
 * carry it. Not AbortSignal.any: it registers every request with the long-lived `closing` signal
 * until a collection runs (garbage that outlives the request).
 */
function clientGone(
  c: Context,
  closing: AbortSignal,
  stops: Set<() => void>,
): { signal: AbortSignal; unlink: () => void } {
  const gone = new AbortController();
  const abort = () => gone.abort(CLIENT_GONE);
  const res = nodeResponse(c);
  if (res) res.once('close', abort);
  else c.req.raw.signal.addEventListener('abort', abort, { once: true });
  if (closing.aborted) abort();
  else stops.add(abort);
  return {
    signal: gone.signal,
    unlink: () => {
      stops.delete(abort);
      // Answered: the response's close (after every answer) need not abort a wait that is over.
      res?.off('close', abort);
    },
  };
}

/** Distinct long-poll query strings whose parse is kept (a commit's re-polls mostly share one). */
const PARSED_QUERIES_KEPT = 64;

/**
 * The query of `/v1/changes`, parsed once per distinct query string: the 500 long-polls a commit
 * answers ask again with the same `after=HEAD&wait=30`, and zod's parse was a tenth of their cost.
 * Only valid queries are kept (a small LRU; the parsed object is only read); a bad one is parsed,
 * and refused, every time.
 */
function changesQueryParser(): (c: Context) => z.output<typeof changesQuery> {
  const kept = new Map<string, z.output<typeof changesQuery>>();
  return (c) => {
    const url = c.req.url;
    const at = url.indexOf('?');
    const search = at < 0 ? '' : url.slice(at);
    const hit = kept.get(search);
    if (hit !== undefined) {
      kept.delete(search);
      kept.set(search, hit);
      return hit;
    }
    const parsed = Object.freeze(parseQuery(c, changesQuery));
    kept.set(search, parsed);
    if (kept.size > PARSED_QUERIES_KEPT) kept.delete(kept.keys().next().value as string);
    return parsed;
  };
}

export function registerFeedRoutes(app: Hono, ctx: AppContext, options: FeedRouteOptions): void {
  // Readers asking the same question share one read and its encoded events, whatever the store.
  const feed = sharedFeedReads(options.feed);
  const schedule = options.schedule ?? realSchedule;
  const closing = options.closing ?? new AbortController().signal;
  const stops = stopFanout(closing);
  const limits = ctx.config.api;
  const streams = new OpenSlots(limits.max_streams);
  const polls = new OpenSlots(limits.max_long_polls);

  const changesQueryOf = changesQueryParser();
  app.get('/v1/changes', async (c) => {
    const q = changesQueryOf(c);
    const after = q.after ?? 0;
    const waitMs = (q.wait ?? 0) * 1000;
    // Only a request that may wait holds a slot: without `wait` it is one page read.
    if (waitMs > 0 && !polls.take()) return busy(c, 'long-polls', 'api.max_long_polls', polls.max);
    const gone = clientGone(c, closing, stops);
    try {
      const items = await longPoll(
        { feed, schedule, disconnected: gone.signal },
        { after, limit: q.limit ?? 100, resource: q.resource },
        waitMs,
      );
      const last = items.length ? items[items.length - 1]!.seq : after;
      // The head is shared per announcement (feed/pageCache.ts): rows read since may be past it.
      const head = Math.max(await feed.head(), last);
      return c.body(longPollAnswer(items, last, head), 200, {
        'content-type': 'application/json',
        // Answered because the API stops: a keep-alive socket left open would hold the stop.
        ...(closing.aborted ? { connection: 'close' } : {}),
      });
    } finally {
      gone.unlink();
      if (waitMs > 0) polls.give();
    }
  });

  app.get('/v1/changes/stream', (c) => {
    const q = parseQuery(c, streamQuery);
    const after = streamStart(c.req.header('last-event-id'), q.after);
    const res = nodeResponse(c);
    if (!res)
      throw new HTTPException(501, { message: 'event streams are served by the daemon listener only' });
    if (!streams.take()) return busy(c, 'event streams', 'api.max_streams', streams.max);
    const sink = nodeEventSink(res);
    const gone = clientGone(c, closing, stops);
    void streamFeed(
      {
        feed,
        schedule,
        heartbeatMs: options.heartbeatMs ?? HEARTBEAT_MS,
        pageSize: STREAM_PAGE,
        maxBacklogBytes: limits.stream_buffer_bytes,
        ended: gone.signal,
      },
      sink,
      { after, resource: q.resource },
    )
      .then(
        (end) => {
          // The client reconnects with Last-Event-ID and loses nothing.
          if (end !== 'ended')
            ctx.log.info(
              { event: 'api.stream_closed', reason: end },
              end === 'behind'
                ? 'change stream closed: its client fell behind'
                : 'change stream closed: its client stalled',
            );
        },
        (err: unknown) => {
          ctx.log.warn(
            { event: 'api.stream_failed', error: errorMessage(err) },
            'change stream ended by an error',
          );
        },
      )
      .finally(() => {
        gone.unlink();
        streams.give();
        if (!res.destroyed) res.end();
      });
    return RESPONSE_ALREADY_SENT;
  });
}
