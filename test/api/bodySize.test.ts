import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { createWebhookComponent, WEBHOOK_PATH } from '../../src/inbox/listener.js';
import { sqliteInboxStore } from '../../src/sqlite/inboxStore.js';
import { testContext } from '../helpers/context.js';
import { count, decisionPayload, insertOutboxRow, outboxRow, SECRET, signed } from '../inbox/helpers.js';
import { tokenization } from '../outbox/fixtures.js';
import { startApi, TOKEN } from './apiHarness.js';
import { padJson, type RawAnswer, rawRequest } from './rawHttp.js';

const KB = 1024;
const MIB = 1024 * KB;
/** Sizes around the old 128 KB - 1 MiB hang, the limit, and past it. */
const SIZES = [1 * KB, 127 * KB, 128 * KB, 200 * KB, 512 * KB, MIB - 1, MIB, MIB + 1, 2 * MIB];

function answered(res: RawAnswer, what: string): Extract<RawAnswer, { kind: 'answer' }> {
  expect(res.kind, `${what}: ${JSON.stringify(res).slice(0, 200)}`).toBe('answer');
  return res as Extract<RawAnswer, { kind: 'answer' }>;
}

describe('POST /v1/operations answers every body size', () => {
  let h: Awaited<ReturnType<typeof startApi>>;
  beforeAll(async () => {
    h = await startApi();
  });
  afterAll(async () => {
    await h.close();
  });

  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  const modes = [
    ['Content-Length', undefined],
    ['chunked, 16 KB pieces', 16 * KB],
    ['chunked, 1000-byte pieces', 1000],
  ] as const;

  for (const [mode, chunkBytes] of modes) {
    it(`${mode}: 201 for a valid body up to 1 MiB, 422 for an invalid one, 413 past it`, async () => {
      const tag = chunkBytes ?? 'cl';
      for (const size of SIZES) {
        const ref = `size-${tag}-${size}`;
        const valid = padJson(JSON.stringify(tokenization(ref)), size);
        const res = answered(
          await rawRequest(h.base, {
            method: 'POST',
            path: '/v1/operations',
            headers,
            body: valid,
            chunkBytes,
          }),
          `${mode} ${size}`,
        );
        if (size <= MIB) {
          expect(res.status, `${mode} ${size}: ${res.text.slice(0, 200)}`).toBe(201);
          expect(res.json.marketplaceTransactionRef).toBe(ref);
        } else {
          expect(res.status, `${mode} ${size}`).toBe(413);
          expect(res.json.error).toMatch(/larger than 1048576 bytes/);
          expect(res.headers.connection).toBe('close');
        }
        // Same size, one unknown field padded out: a field error, not a hang.
        const invalid = padJson(
          JSON.stringify({ ...tokenization(`${ref}-bad`), pad: 'x'.repeat(100) }),
          size,
        );
        const bad = answered(
          await rawRequest(h.base, {
            method: 'POST',
            path: '/v1/operations',
            headers,
            body: invalid,
            chunkBytes,
          }),
          `${mode} ${size} invalid`,
        );
        expect(bad.status, `${mode} ${size} invalid`).toBe(size <= MIB ? 422 : 413);
      }
      // Exactly the bodies up to the limit were queued, once each.
      const stored = h.ctx.database.sqlite
        .prepare(
          'SELECT marketplaceTransactionRef AS ref FROM outbox WHERE marketplaceTransactionRef LIKE ? ORDER BY id',
        )
        .all(`size-${tag}-%`);
      expect(stored).toEqual(SIZES.filter((s) => s <= MIB).map((s) => ({ ref: `size-${tag}-${s}` })));
    });
  }

  it('a body cut off mid-way: the connection is closed, nothing is queued, the next request is answered', async () => {
    // Declares 200 KB, sends 100 KB, then the client half-closes: the server must not wait forever.
    const port = Number(new URL(h.base).port);
    const closed = await new Promise<'closed' | 'timeout'>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => {
        const body = padJson(JSON.stringify(tokenization('cut-off')), 100 * KB);
        socket.write(
          `POST /v1/operations HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nauthorization: Bearer ${TOKEN}\r\n` +
            `content-type: application/json\r\ncontent-length: ${200 * KB}\r\n\r\n${body}`,
        );
        socket.end();
      });
      socket.on('data', () => undefined);
      socket.on('error', () => undefined);
      const timer = setTimeout(() => resolve('timeout'), 15_000);
      socket.on('close', () => {
        clearTimeout(timer);
        resolve('closed');
      });
    });
    expect(closed).toBe('closed');
    const count = h.ctx.database.sqlite
      .prepare("SELECT count(*) AS n FROM outbox WHERE marketplaceTransactionRef = 'cut-off'")
      .get();
    expect(count).toEqual({ n: 0 });
    const next = answered(
      await rawRequest(h.base, {
        method: 'POST',
        path: '/v1/operations',
        headers,
        body: JSON.stringify(tokenization('after-cut')),
      }),
      'next',
    );
    expect(next.status).toBe(201);
  });
});

describe('the webhook listener answers every body size too', () => {
  const NOW = Date.parse('2026-03-01T12:00:00.000Z');
  const LIMIT = 256 * KB;
  let ctx: ReturnType<typeof testContext>;
  let hook: ReturnType<typeof createWebhookComponent>;
  let base: string;

  beforeAll(async () => {
    ctx = testContext({
      clock: new ManualClock(NOW),
      overrides: {
        'webhook.secrets': [SECRET],
        'webhook.listen': '127.0.0.1:0',
        'webhook.max_body_bytes': LIMIT,
      },
    });
    hook = createWebhookComponent(ctx, {
      store: sqliteInboxStore(ctx.database.sqlite),
    });
    await hook.start();
    base = hook.address()!.url;
  });
  afterAll(async () => {
    await hook.stop();
    ctx.dispose();
  });

  for (const chunkBytes of [undefined, 16 * KB]) {
    it(`${chunkBytes ? 'chunked' : 'Content-Length'}: 200 up to max_body_bytes, 413 past it, each decision applied once`, async () => {
      const sizes = [1 * KB, 127 * KB, 128 * KB, 200 * KB, LIMIT, LIMIT + 1, 512 * KB, MIB + 1];
      for (const size of sizes) {
        const ref = `hook-${chunkBytes ?? 'cl'}-${size}`;
        insertOutboxRow(ctx.database.sqlite, ref, 'accepted');
        const text = padJson(JSON.stringify(decisionPayload(ref, 'approved')), size);
        const msg = signed(undefined, { atMs: NOW, body: text });
        const res = answered(
          await rawRequest(base, {
            method: 'POST',
            path: WEBHOOK_PATH,
            headers: msg.headers,
            body: msg.body,
            chunkBytes,
          }),
          `webhook ${size}`,
        );
        expect(res.status, `webhook ${size}: ${res.text.slice(0, 200)}`).toBe(size <= LIMIT ? 200 : 413);
        expect(outboxRow(ctx.database.sqlite, ref).state).toBe(size <= LIMIT ? 'approved' : 'accepted');
      }
    });
  }

  it('a payload hiding fields under __proto__ decides nothing', async () => {
    insertOutboxRow(ctx.database.sqlite, 'proto-ref', 'accepted');
    const before = count(ctx.database.sqlite, 'webhook_events');
    for (const body of [
      '{"__proto__":{"type":"transaction.approved","marketplaceTransactionRef":"proto-ref","status":"approved"}}',
      '{"type":"transaction.approved","data":{"__proto__":{"marketplaceTransactionRef":"proto-ref"}}}',
      '{"constructor":{"prototype":{"marketplaceTransactionRef":"proto-ref"}},"type":"transaction.approved"}',
    ]) {
      const msg = signed(undefined, { atMs: NOW, body });
      const res = answered(
        await rawRequest(base, { method: 'POST', path: WEBHOOK_PATH, headers: msg.headers, body }),
        body,
      );
      // Stored as received (every authenticated webhook is), but it names no operation.
      expect(res.status).toBe(200);
      expect(res.json.outcome).not.toBe('applied');
    }
    expect(count(ctx.database.sqlite, 'webhook_events')).toBe(before + 3);
    expect(outboxRow(ctx.database.sqlite, 'proto-ref').state).toBe('accepted');
    expect(({} as Record<string, unknown>).marketplaceTransactionRef).toBeUndefined();
  });
});
