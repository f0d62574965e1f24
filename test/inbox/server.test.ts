import http from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SqliteContext } from '../../src/app/sqliteStores.js';
import { createWebhookComponent, type WebhookComponent } from '../../src/inbox/listener.js';
import { sqliteInboxStore } from '../../src/sqlite/inboxStore.js';
import { testContext } from '../helpers/context.js';
import { count, decisionPayload, events, insertOutboxRow, SECRET, signed } from './helpers.js';

let ctx: SqliteContext & { dispose: () => void };
let listener: WebhookComponent;
let url: string;

beforeEach(async () => {
  ctx = testContext({ overrides: { 'webhook.secrets': [SECRET], 'webhook.listen': '127.0.0.1:0' } });
  listener = createWebhookComponent(ctx, {
    store: sqliteInboxStore(ctx.database.sqlite),
  });
  await listener.start();
  url = listener.address()!.url;
});
afterEach(async () => {
  await listener.stop();
  ctx.dispose();
});

function postRaw(
  body: () => AsyncIterable<Buffer>,
  headers: Record<string, string>,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers }, (res) => {
      let text = '';
      res.on('data', (c) => {
        text += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    // The server may close while we are still writing: that is the point.
    req.on('error', (err) =>
      String(err).includes('EPIPE') || String(err).includes('ECONNRESET') ? undefined : reject(err),
    );
    (async () => {
      for await (const chunk of body()) if (!req.write(chunk)) await new Promise((r) => req.once('drain', r));
      req.end();
    })().catch(() => undefined);
  });
}

describe('real listener', () => {
  it('200 concurrent valid webhooks (each also replayed): all stored exactly once, all decisions applied', async () => {
    const n = 200;
    for (let i = 0; i < n; i++) insertOutboxRow(ctx.database.sqlite, `ref-${i}`, 'accepted');
    const messages = Array.from({ length: n }, (_, i) =>
      signed(decisionPayload(`ref-${i}`, i % 3 === 0 ? 'rejected' : 'approved', 'why'), {
        id: `msg-${i}`,
        atMs: Date.now(),
      }),
    );
    const requests = [...messages, ...messages].map((m) =>
      fetch(url, { method: 'POST', headers: m.headers, body: m.body }),
    );
    const responses = await Promise.all(requests);
    expect(responses.map((r) => r.status)).toEqual(Array(2 * n).fill(200));
    const bodies = (await Promise.all(responses.map((r) => r.json()))) as Array<{ replay: boolean }>;
    expect(bodies.filter((b) => b.replay)).toHaveLength(n);
    expect(count(ctx.database.sqlite, 'webhook_events')).toBe(n);
    expect(new Set(events(ctx.database.sqlite).map((e) => e.webhook_id)).size).toBe(n);
    const states = ctx.database.sqlite
      .prepare('SELECT state, count(*) AS n FROM outbox GROUP BY state ORDER BY state')
      .all();
    expect(states).toEqual([
      { state: 'approved', n: 133 },
      { state: 'rejected', n: 67 },
    ]);
  });

  it('an oversized chunked body (no Content-Length) is refused with 413 while reading', async () => {
    const msg = signed({ type: 'x' }, { atMs: Date.now() });
    let written = 0;
    const res = await postRaw(
      async function* () {
        // Far more than the limit; the server must answer before all of it could be buffered.
        for (let i = 0; i < 4096 && written < 64 * 1024 * 1024; i++) {
          written += 16 * 1024;
          yield Buffer.alloc(16 * 1024, 0x20);
        }
      },
      { ...msg.headers, 'transfer-encoding': 'chunked' },
    );
    expect(res.status).toBe(413);
    expect(written).toBeLessThan(64 * 1024 * 1024);
    expect(count(ctx.database.sqlite, 'webhook_events')).toBe(0);
    // The listener still serves after it.
    const ok = signed({ type: 'ping' }, { atMs: Date.now() });
    expect((await fetch(url, { method: 'POST', headers: ok.headers, body: ok.body })).status).toBe(200);
  });

  it('refuses to start on a port in use, naming the key', async () => {
    const otherCtx = testContext({
      overrides: { 'webhook.secrets': [SECRET], 'webhook.listen': `127.0.0.1:${listener.address()!.port}` },
    });
    await expect(
      createWebhookComponent(otherCtx, {
        store: sqliteInboxStore(otherCtx.database.sqlite),
      }).start(),
    ).rejects.toThrow(/webhook.listen .*address already in use/);
    otherCtx.dispose();
  });

  it('refuses to start without secrets unless the scheme is none', async () => {
    const bareCtx = testContext({ overrides: { 'webhook.listen': '127.0.0.1:0' } });
    await expect(
      createWebhookComponent(bareCtx, {
        store: sqliteInboxStore(bareCtx.database.sqlite),
      }).start(),
    ).rejects.toThrow(/webhook.secrets is empty/);
    bareCtx.dispose();
  });
});
