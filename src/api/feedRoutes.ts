import type { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { streamSSE } from 'hono/streaming';
import { z } from 'zod';
import type { AppContext } from '../context.js';
import { errorMessage } from '../errors.js';
import { longPoll, realSchedule, type Schedule } from '../feed/longPoll.js';
import { type FeedReads, sqliteFeedReads } from '../feed/reads.js';
import { streamFeed } from '../feed/stream.js';
import { decimalParam, limitParam, parseQuery, type RouteSpec } from './routeSpec.js';
import { changesPage } from './schemas/mirror.js';

/** The change feed over HTTP: a page (optionally long-polled) and a server-sent event stream. */

/** Longest `wait` a long-poll may ask for, seconds. */
export const MAX_WAIT_SECONDS = 60;
/** Idle time before an event stream sends a `: keep-alive` comment, ms. */
export const HEARTBEAT_MS = 15_000;
/** Entries an event stream reads and writes at once (its memory per client). */
export const STREAM_PAGE = 100;

const afterParam = decimalParam(0).optional().describe('last seq already seen (default: 0, from the start)');
const resourceParam = z
  .string()
  .min(1)
  .optional()
  .describe('only changes of this resource (projects, issuances, unit_operations, custody_*, operations)');

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
    responses: { '200': { description: 'call again with after=last', schema: changesPage } },
  },
  {
    method: 'get',
    path: '/v1/changes/stream',
    operationId: 'streamChanges',
    summary:
      'The change feed as server-sent events (id: seq, data: the change as JSON) from after, or from the Last-Event-ID header, which wins; a `: keep-alive` comment every 15 s when idle',
    query: streamQuery,
    produces: 'text/event-stream',
    responses: {
      '200': {
        description: 'one event per change, open until the client leaves',
        contentType: 'text/event-stream',
      },
      '400': 'a bad after, resource or Last-Event-ID, named in the error',
    },
  },
];

/** Where the feed is read, and what tests replace: the timers, the heartbeat interval, the server's stop. */
export interface FeedRouteOptions {
  /** The feed's reads and signal (default: SQLite's, `ctx.database`; pgQueries.ts `pgFeedReads` for PostgreSQL). */
  feed?: FeedReads | undefined;
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

export function registerFeedRoutes(app: Hono, ctx: AppContext, options: FeedRouteOptions = {}): void {
  const feed = options.feed ?? sqliteFeedReads(ctx.database.sqlite);
  const schedule = options.schedule ?? realSchedule;
  const closing = options.closing ?? new AbortController().signal;

  app.get('/v1/changes', async (c) => {
    const q = parseQuery(c, changesQuery);
    const after = q.after ?? 0;
    const items = await longPoll(
      { feed, schedule, disconnected: AbortSignal.any([c.req.raw.signal, closing]) },
      { after, limit: q.limit ?? 100, resource: q.resource },
      (q.wait ?? 0) * 1000,
    );
    const head = await feed.head();
    return c.json(
      { items, last: items.length ? items[items.length - 1]!.seq : after, head },
      200,
      // Answered because the API stops: a keep-alive socket left open would hold the stop.
      closing.aborted ? { connection: 'close' } : {},
    );
  });

  app.get('/v1/changes/stream', (c) => {
    const q = parseQuery(c, streamQuery);
    const after = streamStart(c.req.header('last-event-id'), q.after);
    // The stream is the connection's last answer: once it ends (the API stopping, say), the socket
    // closes instead of idling as keep-alive and holding the stop. A client reconnects anyway.
    const response = streamSSE(c, async (stream) => {
      const gone = new AbortController();
      stream.onAbort(() => gone.abort());
      const ended = AbortSignal.any([gone.signal, c.req.raw.signal, closing]);
      try {
        await streamFeed(
          {
            feed,
            schedule,
            heartbeatMs: options.heartbeatMs ?? HEARTBEAT_MS,
            pageSize: STREAM_PAGE,
            ended,
          },
          { write: async (text) => void (await stream.write(text)) },
          { after, resource: q.resource },
        );
      } catch (err) {
        // The client reconnects with Last-Event-ID and loses nothing; say why the stream ended.
        ctx.log.warn(
          { event: 'api.stream_failed', error: errorMessage(err) },
          'change stream ended by an error',
        );
      }
    });
    response.headers.set('connection', 'close');
    return response;
  });
}
