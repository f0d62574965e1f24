/**
 * Test helpers: HTTP calls against a running simulator, and a real webhook receiver (Hono on
 * node http) that verifies Standard Webhooks signatures with the official library.
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { Webhook } from 'standardwebhooks';
import type { Simulator } from '../../src/simulator/index.js';

export const KEY = 'sim-api-key';

export async function get(
  sim: Simulator,
  path: string,
  headers: Record<string, string> = { apikey: KEY },
): Promise<{ status: number; body: unknown; text: string; headers: Headers }> {
  const res = await fetch(`${sim.url}${path}`, { headers });
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, body, text, headers: res.headers };
}

export async function getArray(sim: Simulator, path: string): Promise<Record<string, unknown>[]> {
  const r = await get(sim, path);
  if (r.status !== 200 || !Array.isArray(r.body))
    throw new Error(`GET ${path} → ${r.status} ${r.text.slice(0, 200)}`);
  return r.body as Record<string, unknown>[];
}

export async function post(
  sim: Simulator,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: unknown; text: string }> {
  const res = await fetch(`${sim.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed, text };
}

export interface ReceivedWebhook {
  id: string;
  payload: Record<string, unknown>;
  verified: boolean;
}

export interface Receiver {
  url: string;
  events: ReceivedWebhook[];
  /** Requests seen, including refused ones. */
  hits: number;
  /** Answer 503 to the next n requests (to exercise the sender's retries). */
  failNext(n: number): void;
  /** Resolves once `n` verified events have arrived (no timers: driven by arrivals). */
  waitFor(n: number): Promise<ReceivedWebhook[]>;
  close(): Promise<void>;
}

export async function startReceiver(secret: string): Promise<Receiver> {
  const events: ReceivedWebhook[] = [];
  const waiters: { n: number; resolve: (e: ReceivedWebhook[]) => void }[] = [];
  let failing = 0;
  const state = { hits: 0 };
  const wh = new Webhook(secret);
  const app = new Hono();
  app.post('/webhooks/operator', async (c) => {
    state.hits++;
    if (failing > 0) {
      failing--;
      return c.json({ message: 'down' }, 503);
    }
    const raw = await c.req.text();
    let payload: Record<string, unknown>;
    try {
      payload = wh.verify(raw, {
        'webhook-id': c.req.header('webhook-id') ?? '',
        'webhook-timestamp': c.req.header('webhook-timestamp') ?? '',
        'webhook-signature': c.req.header('webhook-signature') ?? '',
      }) as Record<string, unknown>;
    } catch {
      return c.json({ message: 'bad signature' }, 401);
    }
    events.push({ id: c.req.header('webhook-id') ?? '', payload, verified: true });
    for (const w of [...waiters]) {
      if (events.length >= w.n) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(events.slice());
      }
    }
    return c.body(null, 204);
  });
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/webhooks/operator`,
    events,
    get hits() {
      return state.hits;
    },
    failNext: (n) => {
      failing = n;
    },
    waitFor: (n) =>
      events.length >= n
        ? Promise.resolve(events.slice())
        : new Promise((resolve) => waiters.push({ n, resolve })),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        if ('closeAllConnections' in server) server.closeAllConnections();
      }),
  };
}
