import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqliteContext } from '../../src/app/sqliteStores.js';
import { ManualClock } from '../../src/common/clock.js';
import { createWebhookApp, WEBHOOK_PATH } from '../../src/inbox/listener.js';
import { sqliteInboxStore } from '../../src/sqlite/inboxStore.js';
import { testContext } from '../helpers/context.js';
import { count, decisionPayload, insertOutboxRow, outboxRow, signed } from './helpers.js';

const NOW = Date.parse('2026-03-01T12:00:00.000Z');
const printable = fc.string({
  unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
  maxLength: 80,
});
const anyBody = fc.oneof(
  fc.string({ maxLength: 200 }),
  fc.json({ maxDepth: 3 }),
  fc
    .constantFrom('approved', 'rejected')
    .map((d) => JSON.stringify(decisionPayload('ref-p', d as 'approved'))),
  fc
    .record({
      type: printable,
      data: fc.record({ marketplaceTransactionRef: fc.constant('ref-p'), status: printable }),
    })
    .map((o) => JSON.stringify(o)),
);
const contentType = fc.oneof(
  fc.constant('application/json'),
  fc.constant('application/json; charset=utf-8'),
  fc.constant(undefined),
  printable,
);
const randomHeaders = fc.dictionary(
  fc.constantFrom('webhook-id', 'webhook-timestamp', 'webhook-signature', 'content-length', 'x-signature'),
  printable,
);

type Kind = 'valid' | 'tampered-body' | 'tampered-signature' | 'wrong-time' | 'random';

let ctx: SqliteContext & { dispose: () => void };
let app: ReturnType<typeof createWebhookApp>;

beforeAll(() => {
  ctx = testContext({
    clock: new ManualClock(NOW),
    overrides: { 'webhook.secrets': [`whsec_${Buffer.alloc(24, 9).toString('base64')}`] },
  });
  app = createWebhookApp(ctx, {
    store: sqliteInboxStore(ctx.database.sqlite),
    rejectionRowsPerMinute: 1_000_000,
  });
  insertOutboxRow(ctx.database.sqlite, 'ref-p', 'accepted');
});
afterAll(() => ctx.dispose());

describe('random requests', () => {
  it('never a 5xx, never an event or decision without a valid signature', async () => {
    const secret = ctx.config.webhook.secrets[0]!;
    let acceptedValid = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<Kind>('valid', 'tampered-body', 'tampered-signature', 'wrong-time', 'random'),
        anyBody,
        contentType,
        randomHeaders,
        fc.integer({ min: 301, max: 10_000_000 }),
        async (kind, body, type, junk, skew) => {
          ctx.database.sqlite.exec(`DELETE FROM webhook_events; UPDATE outbox SET state = 'accepted'`);
          let headers: Record<string, string>;
          let sent = body;
          if (kind === 'random') {
            headers = { ...junk };
            delete headers['content-length'];
          } else {
            const msg = signed(null, {
              atMs: kind === 'wrong-time' ? NOW + (skew % 2 ? skew : -skew) * 1000 : NOW,
              body,
              secret,
            });
            headers = msg.headers;
            if (kind === 'tampered-body') sent = `${body} `;
            if (kind === 'tampered-signature') {
              const sig = headers['webhook-signature']!;
              const i = 3 + (skew % (sig.length - 3));
              headers['webhook-signature'] =
                sig.slice(0, i) + (sig[i] === 'A' ? 'B' : 'A') + sig.slice(i + 1);
            }
          }
          if (type === undefined) delete headers['content-type'];
          else headers['content-type'] = type;
          const res = await app.request(WEBHOOK_PATH, { method: 'POST', headers, body: sent });
          expect(res.status).toBeLessThan(500);
          if (kind !== 'valid') {
            expect(res.status).not.toBe(200);
            expect(count(ctx.database.sqlite, 'webhook_events')).toBe(0);
            expect(outboxRow(ctx.database.sqlite, 'ref-p').state).toBe('accepted');
          } else if (res.status === 200) {
            expect(count(ctx.database.sqlite, 'webhook_events')).toBe(1);
            acceptedValid += 1;
          }
        },
      ),
      { numRuns: 400 },
    );
    // The generator must reach the success path too, or the property proves little.
    expect(acceptedValid).toBeGreaterThan(10);
  });
});
