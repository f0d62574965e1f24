import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SqliteContext } from '../../src/app/sqliteStores.js';
import { ManualClock } from '../../src/common/clock.js';
import { createWebhookApp, WEBHOOK_PATH } from '../../src/inbox/listener.js';
import { sqliteInboxStore } from '../../src/sqlite/inboxStore.js';
import { testContext } from '../helpers/context.js';
import {
  count,
  decisionPayload,
  events,
  insertOutboxRow,
  OTHER_SECRET,
  outboxRow,
  outcomeCount,
  SECRET,
  signed,
} from './helpers.js';

const NOW = Date.parse('2026-03-01T12:00:00.000Z');

let ctx: SqliteContext & { dispose: () => void };
let clock: ManualClock;
let app: ReturnType<typeof createWebhookApp>;

function post(msg: { headers: Record<string, string>; body: string | Uint8Array }) {
  return app.request(WEBHOOK_PATH, { method: 'POST', headers: msg.headers, body: msg.body });
}

/** Nothing was recorded as an event or a decision. */
function assertNothingDecided(ref = 'ref-1') {
  expect(count(ctx.database.sqlite, 'webhook_events')).toBe(0);
  expect(outboxRow(ctx.database.sqlite, ref).state).toBe('accepted');
}

beforeEach(() => {
  clock = new ManualClock(NOW);
  ctx = testContext({ clock, overrides: { 'webhook.secrets': [SECRET], 'webhook.max_body_bytes': 4096 } });
  app = createWebhookApp(ctx, {
    store: sqliteInboxStore(ctx.database.sqlite),
  });
  insertOutboxRow(ctx.database.sqlite, 'ref-1', 'accepted');
});
afterEach(() => ctx.dispose());

describe('refusals: right status, nothing recorded as a decision', () => {
  const valid = () => signed(decisionPayload('ref-1', 'approved'), { atMs: NOW });

  it('forged signature → 401', async () => {
    const msg = valid();
    msg.headers['webhook-signature'] = `v1,${Buffer.alloc(32, 7).toString('base64')}`;
    const res = await post(msg);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error: 'no matching signature' });
    assertNothingDecided();
  });

  it('body changed after signing → 401', async () => {
    const msg = valid();
    const res = await post({ ...msg, body: msg.body.replace('approved', 'rejected') });
    expect(res.status).toBe(401);
    assertNothingDecided();
  });

  it('wrong secret → 401', async () => {
    const res = await post(signed(decisionPayload('ref-1', 'approved'), { atMs: NOW, secret: OTHER_SECRET }));
    expect(res.status).toBe(401);
    assertNothingDecided();
  });

  it('stale timestamp → 401', async () => {
    const res = await post(signed(decisionPayload('ref-1', 'approved'), { atMs: NOW - 301_000 }));
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: string }).error).toMatch(/too old/);
    assertNothingDecided();
  });

  it('future timestamp → 401', async () => {
    const res = await post(signed(decisionPayload('ref-1', 'approved'), { atMs: NOW + 301_000 }));
    expect(res.status).toBe(401);
    assertNothingDecided();
  });

  it.each(['webhook-id', 'webhook-timestamp', 'webhook-signature'])('missing %s → 401', async (name) => {
    const msg = valid();
    delete msg.headers[name];
    const res = await post(msg);
    expect(res.status).toBe(401);
    assertNothingDecided();
  });

  it('oversized body → 413 (declared length and streamed without one)', async () => {
    const big = signed({ ...decisionPayload('ref-1', 'approved'), pad: 'x'.repeat(5000) }, { atMs: NOW });
    expect((await post(big)).status).toBe(413);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 10; i++) controller.enqueue(new Uint8Array(1000).fill(32));
        controller.close();
      },
    });
    const res = await app.request(WEBHOOK_PATH, {
      method: 'POST',
      headers: big.headers,
      body: stream,
      // Node needs duplex for a stream body.
      duplex: 'half',
    });
    expect(res.status).toBe(413);
    assertNothingDecided();
  });

  it('non-JSON body (validly signed) → 400', async () => {
    const res = await post(signed(null, { atMs: NOW, body: 'approved ref-1 <xml/>' }));
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'body is not valid JSON' });
    assertNothingDecided();
  });

  it.each(['[1,2]', '"text"', 'null', '42'])('JSON that is not an object (%s) → 400', async (body) => {
    const res = await post(signed(null, { atMs: NOW, body }));
    expect(res.status).toBe(400);
    assertNothingDecided();
  });

  it('wrong content type → 415, and a missing one too', async () => {
    const msg = valid();
    expect((await post({ ...msg, headers: { ...msg.headers, 'content-type': 'text/plain' } })).status).toBe(
      415,
    );
    const { 'content-type': _, ...noType } = msg.headers;
    expect((await post({ ...msg, headers: noType })).status).toBe(415);
    assertNothingDecided();
  });

  it('a body declared in another charset than UTF-8 → 415 naming it, nothing decided', async () => {
    const msg = valid();
    const headers = { ...msg.headers, 'content-type': 'application/json; charset=utf-16' };
    const res = await post({ ...msg, headers, body: Buffer.from(msg.body, 'utf16le') });
    expect(res.status).toBe(415);
    expect(((await res.json()) as { error: string }).error).toMatch(/^charset "utf-16" is not accepted/);
    assertNothingDecided();
    // The same message declared as UTF-8 is decided.
    const ok = await post({
      ...msg,
      headers: { ...msg.headers, 'content-type': 'application/json; charset=UTF-8' },
    });
    expect(ok.status).toBe(200);
  });

  it('records each refusal (status, reason) and counts it', async () => {
    const msg = valid();
    msg.headers['webhook-signature'] = 'v1,AAAA';
    await post(msg);
    await post({ ...msg, headers: { ...msg.headers, 'content-type': 'text/plain' } });
    const rows = ctx.database.sqlite
      .prepare('SELECT status, reason FROM webhook_rejections ORDER BY id')
      .all();
    expect(rows).toEqual([
      { status: 401, reason: 'no matching signature' },
      { status: 415, reason: 'content type must be application/json' },
    ]);
    expect(await outcomeCount(ctx.metrics.webhookEvents, 'rejected_signature')).toBe(1);
    expect(await outcomeCount(ctx.metrics.webhookEvents, 'rejected_content_type')).toBe(1);
  });

  it('other methods → 405', async () => {
    expect((await app.request(WEBHOOK_PATH)).status).toBe(405);
  });
});

describe('replays', () => {
  it('same webhook-id again → 2xx, no second effect', async () => {
    const msg = signed(decisionPayload('ref-1', 'rejected', 'no units'), { id: 'msg_replay', atMs: NOW });
    const first = await post(msg);
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ outcome: 'applied', replay: false });
    const decidedAt = outboxRow(ctx.database.sqlite, 'ref-1').decided_at;

    clock.advance(60_000);
    const again = signed(decisionPayload('ref-1', 'rejected', 'no units'), {
      id: 'msg_replay',
      atMs: clock.now(),
    });
    const second = await post(again);
    expect(second.status).toBe(200);
    expect(await second.json()).toMatchObject({ outcome: 'duplicate', replay: true });
    expect(events(ctx.database.sqlite)).toHaveLength(1);
    expect(outboxRow(ctx.database.sqlite, 'ref-1').decided_at).toBe(decidedAt);
    expect(await ctx.metrics.rejections.get()).toMatchObject({ values: [{ value: 1 }] });
  });

  it('a replay of a captured request once its timestamp is old → 401', async () => {
    const msg = signed(decisionPayload('ref-1', 'approved'), { id: 'msg_old', atMs: NOW });
    expect((await post(msg)).status).toBe(200);
    clock.advance(301_000);
    expect((await post(msg)).status).toBe(401);
    expect(events(ctx.database.sqlite)).toHaveLength(1);
  });
});

describe('key rotation', () => {
  it('accepts webhooks signed with any configured secret', async () => {
    ctx.dispose();
    ctx = testContext({ clock, overrides: { 'webhook.secrets': [SECRET, OTHER_SECRET] } });
    app = createWebhookApp(ctx, {
      store: sqliteInboxStore(ctx.database.sqlite),
    });
    insertOutboxRow(ctx.database.sqlite, 'ref-1', 'accepted');
    const res = await post(signed(decisionPayload('ref-1', 'approved'), { atMs: NOW, secret: OTHER_SECRET }));
    expect(res.status).toBe(200);
    expect(outboxRow(ctx.database.sqlite, 'ref-1').state).toBe('approved');
  });
});
