/**
 * Hostile requests against the real API listener over loopback (fast-check). Each request is also
 * run through a model of the API's rules written here, independently of the code: the answer must
 * be the status the model predicts, so a 2xx the rules forbid (a wrong acceptance) fails, as does
 * any 5xx and any request left unanswered.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { createWebhookComponent, WEBHOOK_PATH } from '../../src/inbox/listener.js';
import { sqliteInboxStore } from '../../src/sqlite/inboxStore.js';
import { testContext } from '../helpers/context.js';
import { decisionPayload, insertOutboxRow, outboxRow, SECRET, signed } from '../inbox/helpers.js';
import { startApi, TOKEN } from './apiHarness.js';
import { bodyText, expected, requestArb } from './fuzzModel.js';
import { padJson, rawRequest } from './rawHttp.js';

// ---- the run -----------------------------------------------------------------------------------

describe('fuzz: hostile requests to the internal API', () => {
  let h: Awaited<ReturnType<typeof startApi>>;
  beforeAll(async () => {
    h = await startApi();
  });
  afterAll(async () => {
    await h.close();
  });

  it('every request is answered with the status the rules give; nothing else is queued', async () => {
    let n = 0;
    const accepted = new Set<string>();
    await fc.assert(
      fc.asyncProperty(requestArb, async (req) => {
        const ref = `fuzz-${n++}`;
        const text = bodyText(req.body, ref);
        const query = req.params
          .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
          .join('&');
        const path =
          req.route === 'list'
            ? `${req.list}${query ? `?${query}` : ''}`
            : req.route === 'enqueue'
              ? '/v1/operations'
              : req.route === 'cancel'
                ? `/v1/operations/${ref}/cancel`
                : '/v1/nothing-here';
        const headers: Record<string, string> = {};
        const basic = (p: string) => `Basic ${Buffer.from(`u:${p}`).toString('base64')}`;
        if (req.auth === 'bearer') headers.authorization = `Bearer ${TOKEN}`;
        if (req.auth === 'bearer-wrong') headers.authorization = 'Bearer wrong-token';
        if (req.auth === 'basic') headers.authorization = basic(TOKEN);
        if (req.auth === 'basic-wrong') headers.authorization = basic('wrong');
        if (req.contentType !== undefined) headers['content-type'] = req.contentType;
        if (req.origin === 'same') headers.origin = h.base;
        if (req.origin === 'foreign') headers.origin = 'http://evil.example';
        if (req.origin === 'null') headers.origin = 'null';
        if (req.site !== 'absent') headers['sec-fetch-site'] = req.site;
        const res = await rawRequest(h.base, {
          method: req.method,
          path,
          headers,
          ...(text === undefined ? {} : { body: text }),
          ...(req.chunked && text !== undefined ? { chunkBytes: 64 * 1024 } : {}),
        });
        if (res.kind !== 'answer') throw new Error(`${req.method} ${path}: no answer (${res.kind})`);
        const allowed = expected(req, text);
        expect(
          allowed,
          `${req.method} ${path} ${JSON.stringify({ ...req, body: req.body.kind })}: ${res.text.slice(0, 300)}`,
        ).toContain(res.status);
        if (res.status === 201) accepted.add(ref);
      }),
      { numRuns: 300 },
    );
    // The end state: exactly the accepted refs are queued, each with the configured marketplace id.
    const rows = h.ctx.database.sqlite
      .prepare(
        "SELECT marketplaceTransactionRef AS ref, body FROM outbox WHERE marketplaceTransactionRef LIKE 'fuzz-%'",
      )
      .all() as Array<{ ref: string; body: string }>;
    expect(new Set(rows.map((r) => r.ref))).toEqual(accepted);
    for (const r of rows) expect(JSON.parse(r.body).marketplaceId).toBe('mkt-1');
    expect(({} as Record<string, unknown>).marketplaceId).toBeUndefined();
  }, 300_000);
});

describe('fuzz: body sizes at the webhook listener', () => {
  const NOW = Date.parse('2026-03-01T12:00:00.000Z');
  const LIMIT = 256 * 1024;
  let ctx: ReturnType<typeof testContext>;
  let hook: ReturnType<typeof createWebhookComponent>;

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
  });
  afterAll(async () => {
    await hook.stop();
    ctx.dispose();
  });

  it('every size is answered: 200 and the decision applied up to the limit, 413 and nothing past it', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.nat({ max: 8192 }),
          fc.integer({ min: 100 * 1024, max: 2 * LIMIT }),
          fc.integer({ min: LIMIT - 2, max: LIMIT + 2 }),
        ),
        fc.option(fc.integer({ min: 512, max: 128 * 1024 }), { nil: undefined }),
        async (size, chunkBytes) => {
          const ref = `hook-fuzz-${n++}`;
          insertOutboxRow(ctx.database.sqlite, ref, 'accepted');
          const text = padJson(JSON.stringify(decisionPayload(ref, 'approved')), Math.max(size, 200));
          const msg = signed(undefined, { atMs: NOW, body: text });
          const res = await rawRequest(hook.address()!.url, {
            method: 'POST',
            path: WEBHOOK_PATH,
            headers: msg.headers,
            body: text,
            ...(chunkBytes ? { chunkBytes } : {}),
          });
          if (res.kind !== 'answer') throw new Error(`size ${size}: no answer (${res.kind})`);
          const fits = Buffer.byteLength(text) <= LIMIT;
          expect(res.status).toBe(fits ? 200 : 413);
          expect(outboxRow(ctx.database.sqlite, ref).state).toBe(fits ? 'approved' : 'accepted');
        },
      ),
      { numRuns: 60 },
    );
  }, 300_000);
});
