import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SqliteContext } from '../../src/app/sqliteStores.js';
import { ManualClock } from '../../src/common/clock.js';
import { SyncRequests } from '../../src/common/syncRequests.js';
import {
  createWebhookApp,
  createWebhookComponent,
  rereadAtStart,
  WEBHOOK_PATH,
} from '../../src/inbox/listener.js';
import { sqliteInboxStore } from '../../src/sqlite/inboxStore.js';
import { testContext } from '../helpers/context.js';
import { getHealth } from '../helpers/health.js';
import {
  captureLogger,
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
/** The mirror's side of sync requests, as daemon.ts links it; each test serves it as it needs. */
let syncs = new SyncRequests();

let lines: Array<Record<string, unknown>>;

async function send(payload: unknown) {
  const msg = signed(payload, { atMs: clock.now() });
  const res = await app.request(WEBHOOK_PATH, { method: 'POST', headers: msg.headers, body: msg.body });
  expect(res.status).toBe(200);
  return (await res.json()) as { outcome: string; replay: boolean };
}

const decision = (ref: string, type: string, status?: string, extra: Record<string, unknown> = {}) => ({
  type,
  data: { marketplaceTransactionRef: ref, ...(status === undefined ? {} : { status }), ...extra },
});
const logged = (event: string) => lines.filter((l) => l.event === event);
const problem = (code: string) =>
  getHealth(ctx.database.sqlite, ctx.config, clock.now()).problems.find((p) => p.code === code);

beforeEach(() => {
  clock = new ManualClock(NOW);
  ctx = testContext({ clock, overrides: { 'webhook.secrets': [SECRET] } });
  const capture = captureLogger();
  ctx.log = capture.log;
  lines = capture.lines;
  syncs = new SyncRequests();
  app = createWebhookApp(ctx, { store: sqliteInboxStore(ctx.database.sqlite), requestSync: syncs.request });
});
afterEach(() => ctx.dispose());

describe('a signed webhook whose words are in no list decides nothing', () => {
  const cases: Array<[string, string | undefined]> = [
    ['transaction.updated', 'disapproved'],
    ['transaction.updated', 'not approved'],
    ['transaction.updated', 'UNAPPROVED'],
    ['transaction.updated', 'pending_approval'],
    ['transaction.updated', 'approval_revoked'],
    ['transaction.rejected_after_approval_review', undefined],
    ['transaction.approved', 'accepted'],
    ['transaction.approved', 'rejected'],
  ];

  it('each is stored with its words, flagged, counted, logged, and the operation stays accepted', async () => {
    for (const [i, [type, status]] of cases.entries()) {
      insertOutboxRow(ctx.database.sqlite, `ref-${i}`, 'accepted');
      expect(await send(decision(`ref-${i}`, type, status))).toEqual({
        received: true,
        outcome: 'undecided',
        replay: false,
      });
    }
    expect(cases.map((_, i) => outboxRow(ctx.database.sqlite, `ref-${i}`).state)).toEqual(
      cases.map(() => 'accepted'),
    );
    const rows = ctx.database.sqlite
      .prepare(
        'SELECT event_type, event_status, outcome, decision, outbox_id, marketplaceTransactionRef AS ref FROM webhook_events ORDER BY id',
      )
      .all() as Array<Record<string, unknown>>;
    expect(rows).toEqual(
      cases.map(([type, status], i) => ({
        event_type: type,
        event_status: status ?? null,
        outcome: 'undecided',
        decision: null,
        outbox_id: outboxRow(ctx.database.sqlite, `ref-${i}`).id,
        ref: `ref-${i}`,
      })),
    );
    expect(await outcomeCount(ctx.metrics.webhookEvents, 'undecided')).toBe(cases.length);
    expect(await outcomeCount(ctx.metrics.webhookEvents, 'applied')).toBe(0);
    const warnings = logged('webhook.undecided');
    expect(warnings).toHaveLength(cases.length);
    expect(warnings[2]).toMatchObject({
      level: 40,
      ref: 'ref-2',
      type: 'transaction.updated',
      status: 'UNAPPROVED',
      why: 'status "UNAPPROVED" is in no webhook.decisions list',
    });
    expect(problem('webhook-undecided')).toEqual({
      severity: 'warning',
      code: 'webhook-undecided',
      message: `${cases.length} webhooks in the last 24h carried no decision the vocabulary can read (latest: type "transaction.approved", status "rejected"); not applied`,
      action: expect.stringContaining('webhook.decisions'),
    });
  });

  it('a later, readable decision for the same operation still applies', async () => {
    insertOutboxRow(ctx.database.sqlite, 'ref-1', 'accepted');
    await send(decision('ref-1', 'transaction.updated', 'pending_approval'));
    expect(await send(decision('ref-1', 'transaction.approved', 'APPROVED'))).toMatchObject({
      outcome: 'applied',
    });
    expect(outboxRow(ctx.database.sqlite, 'ref-1').state).toBe('approved');
  });

  it('a neutral word is stored without a flag; an unknown event naming no operation is ignored', async () => {
    insertOutboxRow(ctx.database.sqlite, 'ref-1', 'accepted');
    expect(await send(decision('ref-1', 'transaction.updated', 'Pending'))).toMatchObject({
      outcome: 'ignored',
    });
    expect(await send({ type: 'ping' })).toMatchObject({ outcome: 'ignored' });
    expect(outboxRow(ctx.database.sqlite, 'ref-1').state).toBe('accepted');
    expect(events(ctx.database.sqlite)).toHaveLength(2);
    expect(logged('webhook.undecided')).toEqual([]);
    expect(problem('webhook-undecided')).toBeUndefined();
  });

  it('deposit confirmations still add custody ids and request a custody sync', async () => {
    const requested: unknown[] = [];
    syncs.serve((targets) => {
      requested.push(targets);
    });
    expect(await send({ type: 'custody.deposit', data: { projectID: 7, unitIds: [11, 12] } })).toMatchObject({
      outcome: 'applied',
    });
    expect(await send({ type: 'UNITS_DEPOSITED', data: { unitIds: [13] } })).toMatchObject({
      outcome: 'applied',
    });
    expect(requested).toEqual([['custody'], ['custody']]);
    const ids = ctx.database.sqlite.prepare('SELECT kind, id FROM custody_ids ORDER BY kind, id').all();
    expect(ids).toEqual([
      { kind: 'projects', id: '7' },
      { kind: 'units', id: '11' },
      { kind: 'units', id: '12' },
      { kind: 'units', id: '13' },
    ]);
  });

  it('keeps personal data out of the warning', async () => {
    insertOutboxRow(ctx.database.sqlite, 'ref-1', 'accepted');
    await send(
      decision('ref-1', 'transaction.updated', 'on hold', {
        originUserName: 'Ada Lovelace',
        originUserEmail: 'ada@example.invalid',
        destinationUserDocId: 'DOC-998877',
      }),
    );
    expect(logged('webhook.undecided')).toHaveLength(1);
    const text = JSON.stringify(lines);
    for (const secret of ['Ada Lovelace', 'ada@example.invalid', 'DOC-998877'])
      expect(text).not.toContain(secret);
  });
});

describe('undecided events are read again at start-up with the current vocabulary', () => {
  it('adding the operator’s word applies the stored decisions, in arrival order', async () => {
    insertOutboxRow(ctx.database.sqlite, 'ref-acc', 'accepted');
    insertOutboxRow(ctx.database.sqlite, 'ref-done', 'approved');
    insertOutboxRow(ctx.database.sqlite, 'ref-queued', 'queued');
    await send(decision('ref-acc', 'transaction.decided', 'OK'));
    await send(decision('ref-acc', 'transaction.decided', 'KO', { reason: 'late' }));
    await send(decision('ref-done', 'transaction.decided', 'KO'));
    await send(decision('ref-queued', 'transaction.decided', 'OK'));
    await send(decision('ref-acc', 'transaction.decided', 'still unknown'));
    expect(events(ctx.database.sqlite).map((e) => e.outcome)).toEqual(Array(5).fill('undecided'));

    // Unchanged vocabulary: nothing happens.
    expect(await rereadAtStart({ ...ctx, store: sqliteInboxStore(ctx.database.sqlite) })).toBe(0);

    const decisions = { ...ctx.config.webhook.decisions, approved: ['approved', 'ok'], rejected: ['ko'] };
    const restarted = { ...ctx, config: { ...ctx.config, webhook: { ...ctx.config.webhook, decisions } } };
    expect(await rereadAtStart({ ...restarted, store: sqliteInboxStore(ctx.database.sqlite) })).toBe(4);

    expect(outboxRow(ctx.database.sqlite, 'ref-acc').state).toBe('approved');
    expect(outboxRow(ctx.database.sqlite, 'ref-done').state).toBe('approved');
    expect(outboxRow(ctx.database.sqlite, 'ref-queued').state).toBe('queued');
    expect(
      events(ctx.database.sqlite).map((e) => [e.marketplaceTransactionRef, e.decision, e.outcome]),
    ).toEqual([
      ['ref-acc', 'approved', 'applied'],
      ['ref-acc', 'rejected', 'conflict'],
      ['ref-done', 'rejected', 'conflict'],
      ['ref-queued', 'approved', 'pending'],
      ['ref-acc', null, 'undecided'],
    ]);
    expect(logged('webhook.undecided.reread')).toEqual([expect.objectContaining({ resolved: 4 })]);
    expect(logged('operation.approved').map((l) => l.ref)).toEqual(['ref-acc']);
    // Read once more: only the still-unknown word is left, and it stays.
    expect(await rereadAtStart({ ...restarted, store: sqliteInboxStore(ctx.database.sqlite) })).toBe(0);
  });

  it('the listener does it when it starts', async () => {
    insertOutboxRow(ctx.database.sqlite, 'ref-1', 'accepted');
    await send(decision('ref-1', 'transaction.accepted'));
    expect(outboxRow(ctx.database.sqlite, 'ref-1').state).toBe('accepted');
    const webhook = {
      ...ctx.config.webhook,
      listen: '127.0.0.1:0',
      decisions: { ...ctx.config.webhook.decisions, approved: ['approved', 'accepted'] },
    };
    const listener = createWebhookComponent(
      { ...ctx, config: { ...ctx.config, webhook } },
      { store: sqliteInboxStore(ctx.database.sqlite) },
    );
    await listener.start();
    try {
      expect(outboxRow(ctx.database.sqlite, 'ref-1').state).toBe('approved');
      expect(events(ctx.database.sqlite).map((e) => e.outcome)).toEqual(['applied']);
    } finally {
      await listener.stop();
    }
  });
});
