import http from 'node:http';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqliteContext } from '../../src/app/sqliteStores.js';
import { rawHeaderReader } from '../../src/inbox/headers.js';
import { createWebhookComponent, type WebhookComponent } from '../../src/inbox/listener.js';
import { sqliteInboxStore } from '../../src/sqlite/inboxStore.js';
import { testContext } from '../helpers/context.js';
import { decisionPayload, events, SECRET, signed } from './helpers.js';

const NAMES = ['webhook-id', 'webhook-signature', 'content-type', 'content-length', 'x-other'] as const;

/** A header name as a sender may spell it: any letter case. */
const spelled = fc
  .tuple(fc.constantFrom(...NAMES), fc.array(fc.boolean(), { minLength: 20, maxLength: 20 }))
  .map(([name, upper]) => [...name].map((ch, i) => (upper[i] ? ch.toUpperCase() : ch)).join(''));
/** A value with HTTP whitespace (and other characters Headers keeps) around and inside it. */
const value = fc
  .tuple(
    fc.constantFrom('', ' ', '\t', ' \t '),
    fc.string({
      unit: fc.constantFrom('a', 'Z', '1', ',', '=', ' ', '\t', '/', '+', '\u00a0'),
      maxLength: 12,
    }),
    fc.constantFrom('', ' ', '\t', '  '),
  )
  .map(([before, inner, after]) => before + inner + after);

describe('rawHeaderReader', () => {
  it('answers exactly as Headers.get for the same raw headers (case, whitespace, repeats, absence)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(spelled, value), { maxLength: 8 }), (pairs) => {
        const read = rawHeaderReader(pairs.flat());
        const web = new Headers(pairs);
        for (const name of NAMES) expect(read(name)).toBe(web.get(name) ?? undefined);
      }),
      { numRuns: 500 },
    );
  });
});

describe('the listener reads headers from the wire as Hono would', () => {
  const NOW = Date.now();
  let ctx: SqliteContext & { dispose: () => void };
  let listener: WebhookComponent;

  beforeAll(async () => {
    ctx = testContext({ overrides: { 'webhook.secrets': [SECRET], 'webhook.listen': '127.0.0.1:0' } });
    listener = createWebhookComponent(ctx, { store: sqliteInboxStore(ctx.database.sqlite) });
    await listener.start();
  });
  afterAll(async () => {
    await listener.stop();
    ctx.dispose();
  });

  /** POSTs with raw header lines (names as given, repeats kept), answering status and body. */
  function post(rawHeaders: string[], body: string): Promise<{ status: number; body: string }> {
    const { url, host, port } = listener.address()!;
    // Raw header lines replace Node's defaults: Host (which the server requires) and the length too.
    const headers = [
      ...rawHeaders,
      'Host',
      `${host}:${port}`,
      'Content-Length',
      String(Buffer.byteLength(body)),
    ];
    return new Promise((resolve, reject) => {
      const req = http.request(url, { method: 'POST', headers }, (res) => {
        let text = '';
        res.on('data', (chunk) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  it('mixed-case names, padded values and a signature split over two header lines verify and store', async () => {
    const hook = signed(decisionPayload('ref-headers-1', 'approved'), { id: 'msg_headers_1', atMs: NOW });
    const answer = await post(
      [
        'Content-Type',
        ' application/json ',
        'WEBHOOK-ID',
        '\tmsg_headers_1 ',
        'Webhook-Timestamp',
        hook.headers['webhook-timestamp']!,
        // Joined as "v1,bm90LWl0, v1,<good>": the good signature still counts.
        'webhook-signature',
        'v1,bm90LWl0',
        'Webhook-Signature',
        ` ${hook.headers['webhook-signature']!}`,
      ],
      hook.body,
    );
    expect(answer).toMatchObject({ status: 200 });
    expect(events(ctx.database.sqlite).map((e) => e.webhook_id)).toContain('msg_headers_1');
  });

  it('two Content-Type lines are read joined, as Hono reads them: refused 415, nothing stored', async () => {
    const hook = signed(decisionPayload('ref-headers-2', 'approved'), { id: 'msg_headers_2', atMs: NOW });
    const answer = await post(
      [
        'content-type',
        'application/json',
        'content-type',
        'text/plain',
        ...Object.entries(hook.headers)
          .filter(([name]) => name !== 'content-type')
          .flat(),
      ],
      hook.body,
    );
    expect(answer).toMatchObject({ status: 415 });
    expect(events(ctx.database.sqlite).map((e) => e.webhook_id)).not.toContain('msg_headers_2');
  });
});
