import http from 'node:http';
import { registerFeedRoutes } from '../../src/api/feedRoutes.js';
import type { RouteRegistrar } from '../../src/api/server.js';
import type { SqliteContext } from '../../src/app/sqliteStores.js';
import type { Schedule } from '../../src/common/clock.js';
import type { FeedReads } from '../../src/feed/feedReads.js';
import { sqliteApiComponent, sqliteApiOf, sqliteRegistrars } from '../helpers/sqliteApi.js';

/** Timers a test fires by hand: a long-poll's wait ends, a heartbeat falls due, without waiting. */
export class ManualTimers {
  private readonly timers = new Set<{ ms: number; fn: () => void }>();
  readonly schedule: Schedule = (ms, fn) => {
    const timer = { ms, fn };
    this.timers.add(timer);
    return () => this.timers.delete(timer);
  };
  /** How many are armed now. */
  get armed(): number {
    return this.timers.size;
  }
  /** Fires every armed timer (of `ms`, if given). */
  fire(ms?: number): void {
    for (const t of [...this.timers]) {
      if (ms !== undefined && t.ms !== ms) continue;
      this.timers.delete(t);
      t.fn();
    }
  }
}

/**
 * The API's registrars with the feed's routes on manual timers (registered first, so they win),
 * reading `feed` (default: SQLite's, the context's database).
 */
export function feedRegistrars(
  ctx: SqliteContext,
  timers: ManualTimers,
  heartbeatMs = 15_000,
  feed?: FeedReads,
): RouteRegistrar[] {
  return [
    (app, c, closing) =>
      registerFeedRoutes(app, c, {
        schedule: timers.schedule,
        heartbeatMs,
        closing,
        feed: feed ?? sqliteApiOf(ctx).feed,
      }),
    ...sqliteRegistrars(ctx),
  ];
}

/** The real API listener over `ctx` with the feed on manual timers. */
export async function startFeedApi(
  ctx: SqliteContext,
  timers: ManualTimers,
  heartbeatMs?: number,
  feed?: FeedReads,
) {
  const api = sqliteApiComponent(ctx, {}, feedRegistrars(ctx, timers, heartbeatMs, feed));
  await api.start();
  return { api, base: `http://127.0.0.1:${api.address()!.port}` };
}

/** One server-sent event as parsed by the test's reader. */
export interface SseEvent {
  id?: string;
  data?: string;
  comment?: string;
}

/**
 * An event stream read over a raw HTTP request: events are collected as they arrive, and the test
 * waits for a condition on them (woken by each chunk, never by a timer).
 */
export function openStream(base: string, path: string, token: string, headers: Record<string, string> = {}) {
  const events: SseEvent[] = [];
  let buffer = '';
  let notify: (() => void) | undefined;
  let response: http.IncomingMessage | undefined;
  const req = http.get(`${base}${path}`, { headers: { authorization: `Bearer ${token}`, ...headers } });
  const ready = new Promise<http.IncomingMessage>((resolve, reject) => {
    req.on('response', (res) => {
      response = res;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end = buffer.indexOf('\n\n');
        while (end >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event: SseEvent = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) event.comment = line.slice(1).trim();
            else if (line.startsWith('id: ')) event.id = line.slice(4);
            else if (line.startsWith('data: ')) event.data = line.slice(6);
          }
          events.push(event);
          end = buffer.indexOf('\n\n');
        }
        notify?.();
      });
      res.on('end', () => notify?.());
      resolve(res);
    });
    req.on('error', reject);
  });
  return {
    events,
    ready,
    get response() {
      return response;
    },
    /** Resolves once `check(events)` holds; rejects if the stream ends first. */
    async until(check: (events: SseEvent[]) => boolean, what: string): Promise<void> {
      const res = await ready;
      while (!check(events)) {
        if (res.readableEnded) throw new Error(`stream ended before ${what}`);
        await new Promise<void>((resolve) => {
          notify = resolve;
        });
      }
    },
    close: () => req.destroy(),
  };
}
