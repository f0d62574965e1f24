import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SqliteContext } from '../../src/app/sqliteStores.js';
import { ManualClock } from '../../src/common/clock.js';
import { bodyHash } from '../../src/inbox/correlate.js';
import { createWebhookApp, WEBHOOK_PATH } from '../../src/inbox/listener.js';
import { sqliteInboxStore } from '../../src/sqlite/inboxStore.js';
import { testContext } from '../helpers/context.js';
import { getHealth } from '../helpers/health.js';
import {
  captureLogger,
  decisionPayload,
  events,
  insertOutboxRow,
  outboxRow,
  outcomeCount,
  SECRET,
  signed,
} from './helpers.js';

const NOW = Date.parse('2026-03-01T12:00:00.000Z');

let ctx: SqliteContext & { dispose: () => void };
let clock: ManualClock;
let app: ReturnType<typeof createWebhookApp>;
let lines: Array<Record<string, unknown>>;

/** Signs `payload` under `id` now (a retry is re-signed with a fresh timestamp, as senders do). */
async function send(payload: unknown, id: string) {
  const msg = signed(payload, { id, atMs: clock.now() });
  const res = await app.request(WEBHOOK_PATH, { method: 'POST', headers: msg.headers, body: msg.body });
  expect(res.status).toBe(200);
  return (await res.json()) as { outcome: string; replay: boolean };
}

const logged = (event: string) => lines.filter((l) => l.event === event);
const problem = (code: string) =>
  getHealth(ctx.database.sqlite, ctx.config, clock.now()).problems.find((p) => p.code === code);

beforeEach(() => {
  clock = new ManualClock(NOW);
  ctx = testContext({ clock, overrides: { 'webhook.secrets': [SECRET] } });
  const capture = captureLogger();
  ctx.log = capture.log;
  lines = capture.lines;
  app = createWebhookApp(ctx, {
    store: sqliteInboxStore(ctx.database.sqlite),
  });
});
afterEach(() => ctx.dispose());

describe('the same webhook id with the same body: a replay', () => {
  it('answers 2xx, changes nothing, is counted and logged at debug only', async () => {
    insertOutboxRow(ctx.database.sqlite, 'ref-1', 'accepted');
    const payload = decisionPayload('ref-1', 'rejected', 'no units');
    expect(await send(payload, 'msg_1')).toEqual({ received: true, outcome: 'applied', replay: false });
    const decided = outboxRow(ctx.database.sqlite, 'ref-1');

    for (let i = 0; i < 3; i++) {
      clock.advance(30_000);
      expect(await send(payload, 'msg_1')).toEqual({ received: true, outcome: 'duplicate', replay: true });
    }
    expect(events(ctx.database.sqlite)).toHaveLength(1);
    expect(outboxRow(ctx.database.sqlite, 'ref-1')).toEqual(decided);
    expect(await outcomeCount(ctx.metrics.webhookEvents, 'replay')).toBe(3);
    expect(await outcomeCount(ctx.metrics.webhookEvents, 'applied')).toBe(1);
    expect((await ctx.metrics.rejections.get()).values[0]?.value).toBe(1);
    expect(logged('webhook.replay')).toHaveLength(3);
    expect(logged('webhook.replay').every((l) => l.level === 20)).toBe(true);
    expect(lines.filter((l) => (l.level as number) >= 40).map((l) => l.event)).toEqual([
      'operation.rejected',
    ]);
    expect(problem('webhook-id-reused')).toBeUndefined();
  });

  it('a row stored before body_hash was kept is compared by its stored body', async () => {
    insertOutboxRow(ctx.database.sqlite, 'ref-1', 'approved');
    insertOutboxRow(ctx.database.sqlite, 'ref-2', 'accepted');
    const old = JSON.stringify(decisionPayload('ref-1', 'approved'));
    ctx.database.sqlite
      .prepare(
        `INSERT INTO webhook_events (webhook_id, received_at, event_type, marketplaceTransactionRef, decision, body, outcome)
         VALUES ('msg_legacy', '2026-02-01T00:00:00.000Z', 'transaction.approved', 'ref-1', 'approved', ?, 'applied')`,
      )
      .run(old);
    expect(await send(decisionPayload('ref-1', 'approved'), 'msg_legacy')).toMatchObject({ replay: true });
    expect(await send(decisionPayload('ref-2', 'approved'), 'msg_legacy')).toMatchObject({
      outcome: 'applied',
      replay: false,
    });
    expect(outboxRow(ctx.database.sqlite, 'ref-2').state).toBe('approved');
    expect(events(ctx.database.sqlite).map((e) => e.webhook_id)).toEqual(['msg_legacy', 'msg_legacy']);
  });
});

describe('the same webhook id with another body: a new fact', () => {
  it('a sender whose ids restart (the demo run twice): every new decision is recorded and applied', async () => {
    const first = ['a1', 'a2', 'a3'];
    const second = ['b1', 'b2', 'b3'];
    for (const ref of [...first, ...second]) insertOutboxRow(ctx.database.sqlite, ref, 'accepted');
    for (const [i, ref] of first.entries()) await send(decisionPayload(ref, 'approved'), `msg_sim_${i + 1}`);

    clock.advance(3_600_000);
    // The restarted sender counts from 1 again; one of its decisions is a rejection.
    const answers = [];
    for (const [i, ref] of second.entries()) {
      answers.push(
        await send(decisionPayload(ref, i === 1 ? 'rejected' : 'approved', 'no units'), `msg_sim_${i + 1}`),
      );
    }
    expect(answers).toEqual(second.map(() => ({ received: true, outcome: 'applied', replay: false })));
    expect([...first, ...second].map((ref) => outboxRow(ctx.database.sqlite, ref).state)).toEqual([
      'approved',
      'approved',
      'approved',
      'approved',
      'rejected',
      'approved',
    ]);

    const rows = ctx.database.sqlite
      .prepare(
        'SELECT webhook_id, marketplaceTransactionRef AS ref, id_reused, body_hash FROM webhook_events ORDER BY id',
      )
      .all() as Array<{ webhook_id: string; ref: string; id_reused: number; body_hash: string }>;
    expect(rows.map((r) => [r.webhook_id, r.ref, r.id_reused])).toEqual([
      ['msg_sim_1', 'a1', 0],
      ['msg_sim_2', 'a2', 0],
      ['msg_sim_3', 'a3', 0],
      ['msg_sim_1', 'b1', 1],
      ['msg_sim_2', 'b2', 1],
      ['msg_sim_3', 'b3', 1],
    ]);
    const sent = JSON.stringify(decisionPayload('b1', 'approved', 'no units'));
    expect(rows[3]!.body_hash).toBe(bodyHash(Buffer.from(sent)));

    expect((await ctx.metrics.webhookIdReused.get()).values[0]?.value).toBe(3);
    expect(await outcomeCount(ctx.metrics.webhookEvents, 'replay')).toBe(0);
    const warnings = logged('webhook.id_reused');
    expect(warnings.map((l) => [l.level, l.webhookId, l.ref, l.outcome])).toEqual([
      [40, 'msg_sim_1', 'b1', 'applied'],
      [40, 'msg_sim_2', 'b2', 'applied'],
      [40, 'msg_sim_3', 'b3', 'applied'],
    ]);

    expect(problem('webhook-id-reused')).toEqual({
      severity: 'warning',
      code: 'webhook-id-reused',
      message:
        '3 webhooks in the last 24h reused an earlier webhook id with another body; each was recorded and applied as a new event',
      action: expect.stringContaining('make them unique'),
    });
    // The warning is about the last day: it clears once the sender's ids are unique again.
    clock.advance(25 * 3_600_000);
    expect(problem('webhook-id-reused')).toBeUndefined();
  });

  it('each body under a reused id is replayed on its own; a third body is new again', async () => {
    for (const ref of ['r1', 'r2', 'r3']) insertOutboxRow(ctx.database.sqlite, ref, 'accepted');
    await send(decisionPayload('r1', 'approved'), 'msg_x');
    await send(decisionPayload('r2', 'approved'), 'msg_x');
    expect(await send(decisionPayload('r1', 'approved'), 'msg_x')).toMatchObject({ replay: true });
    expect(await send(decisionPayload('r2', 'approved'), 'msg_x')).toMatchObject({ replay: true });
    expect(await send(decisionPayload('r3', 'rejected'), 'msg_x')).toMatchObject({
      outcome: 'applied',
      replay: false,
    });
    expect(events(ctx.database.sqlite)).toHaveLength(3);
    expect(['r1', 'r2', 'r3'].map((r) => outboxRow(ctx.database.sqlite, r).state)).toEqual([
      'approved',
      'approved',
      'rejected',
    ]);
    expect(await outcomeCount(ctx.metrics.webhookEvents, 'replay')).toBe(2);
    expect((await ctx.metrics.webhookIdReused.get()).values[0]?.value).toBe(2);
  });

  it('a reused id that contradicts the decision it first carried is a conflict, not a replay', async () => {
    insertOutboxRow(ctx.database.sqlite, 'ref-1', 'accepted');
    await send(decisionPayload('ref-1', 'approved'), 'msg_c');
    expect(await send(decisionPayload('ref-1', 'rejected', 'changed'), 'msg_c')).toMatchObject({
      outcome: 'conflict',
      replay: false,
    });
    expect(outboxRow(ctx.database.sqlite, 'ref-1').state).toBe('approved');
    const codes = getHealth(ctx.database.sqlite, ctx.config, clock.now()).problems.map((p) => p.code);
    expect(codes.filter((c) => c.startsWith('webhook-') || c.startsWith('decision-'))).toEqual([
      'decision-conflict',
      'webhook-id-reused',
    ]);
  });
});
