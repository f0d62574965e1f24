import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { SqliteContext } from '../../src/app/sqliteStores.js';
import { isoAt, ManualClock } from '../../src/common/clock.js';
import type { SyncTarget, SyncTrigger } from '../../src/common/syncRequests.js';
import { SyncRequests } from '../../src/common/syncRequests.js';
import { acceptedDecisions } from '../../src/inbox/correlate.js';
import { createWebhookApp, runInboxMaintenance, WEBHOOK_PATH } from '../../src/inbox/listener.js';
import { stateChangeSinkOf } from '../../src/sqlite/changes.js';
import { driveSqlite } from '../../src/sqlite/commitQueue.js';
import { sqliteInboxStore } from '../../src/sqlite/inboxStore.js';
import { testContext } from '../helpers/context.js';
import {
  captureLogger,
  decisionPayload,
  events,
  insertOutboxRow,
  outboxRow,
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

async function send(payload: unknown, id?: string) {
  const msg = signed(payload, { atMs: clock.now(), ...(id ? { id } : {}) });
  const res = await app.request(WEBHOOK_PATH, { method: 'POST', headers: msg.headers, body: msg.body });
  expect(res.status).toBe(200);
  return (await res.json()) as { outcome: string; replay: boolean };
}

/** What the dispatcher does when /notify answers 2xx: mark accepted and apply early decisions, in one transaction. */
function markAccepted(ref: string) {
  const { sqlite } = ctx.database;
  return sqlite.transaction(() => {
    const row = sqlite
      .prepare(
        `UPDATE outbox SET state = 'accepted', accepted_at = ? WHERE marketplaceTransactionRef = ? RETURNING id`,
      )
      .get(isoAt(clock.now()), ref) as { id: number };
    const at = { now: isoAt(clock.now()), sink: stateChangeSinkOf(sqlite) };
    return driveSqlite(sqlite, acceptedDecisions({ id: row.id, ref, mask: (text) => text }, at));
  })();
}

const logged = (event: string) => lines.filter((l) => l.event === event);

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

describe('decisions on accepted operations', () => {
  it('approval moves accepted → approved with decided_at and finished_at', async () => {
    insertOutboxRow(ctx.database.sqlite, 'ref-a', 'accepted');
    expect(await send(decisionPayload('ref-a', 'approved'))).toMatchObject({ outcome: 'applied' });
    expect(outboxRow(ctx.database.sqlite, 'ref-a')).toMatchObject({
      state: 'approved',
      decision_reason: null,
      decided_at: isoAt(NOW),
      finished_at: isoAt(NOW),
    });
  });

  it('rejection is applied with its reason, loudly: warn log and metric', async () => {
    insertOutboxRow(ctx.database.sqlite, 'ref-r', 'accepted');
    await send(decisionPayload('ref-r', 'rejected', 'units not in custody'));
    expect(outboxRow(ctx.database.sqlite, 'ref-r')).toMatchObject({
      state: 'rejected',
      decision_reason: 'units not in custody',
    });
    expect(logged('operation.rejected')).toEqual([
      expect.objectContaining({ level: 40, ref: 'ref-r', reason: 'units not in custody' }),
    ]);
    expect((await ctx.metrics.rejections.get()).values[0]?.value).toBe(1);
    expect(JSON.stringify(lines)).not.toContain(SECRET.slice('whsec_'.length));
  });

  it('a repeated identical decision (new webhook id) is recorded as duplicate, nothing changes', async () => {
    insertOutboxRow(ctx.database.sqlite, 'ref-d', 'accepted');
    await send(decisionPayload('ref-d', 'approved'));
    clock.advance(1000);
    expect(await send(decisionPayload('ref-d', 'approved'))).toMatchObject({
      outcome: 'duplicate',
      replay: false,
    });
    expect(outboxRow(ctx.database.sqlite, 'ref-d').decided_at).toBe(isoAt(NOW));
    expect(events(ctx.database.sqlite).map((e) => e.outcome)).toEqual(['applied', 'duplicate']);
  });

  it('a contradicting decision is recorded as conflict, not applied, and raised', async () => {
    insertOutboxRow(ctx.database.sqlite, 'ref-c', 'accepted');
    await send(decisionPayload('ref-c', 'approved'));
    expect(await send(decisionPayload('ref-c', 'rejected', 'changed our mind'))).toMatchObject({
      outcome: 'conflict',
    });
    expect(outboxRow(ctx.database.sqlite, 'ref-c').state).toBe('approved');
    expect(logged('webhook.decision.conflict')).toEqual([
      expect.objectContaining({ level: 50, ref: 'ref-c' }),
    ]);
    expect(await sqliteInboxStore(ctx.database.sqlite).decisionConflicts()).toEqual([
      expect.objectContaining({ marketplaceTransactionRef: 'ref-c', decision: 'rejected' }),
    ]);
    expect((await ctx.metrics.rejections.get()).values[0]?.value ?? 0).toBe(0);
  });

  it('a decision for a row this side gave up on is kept, not applied', async () => {
    insertOutboxRow(ctx.database.sqlite, 'ref-f', 'failed');
    expect(await send(decisionPayload('ref-f', 'approved'))).toMatchObject({ outcome: 'ignored' });
    expect(outboxRow(ctx.database.sqlite, 'ref-f').state).toBe('failed');
    expect(logged('webhook.decision.unexpected_state')).toHaveLength(1);
  });
});

describe('decisions that arrive early', () => {
  it('before the operation is known: pending, applied once it is enqueued and accepted', async () => {
    expect(await send(decisionPayload('ref-early', 'rejected', 'late ref'))).toMatchObject({
      outcome: 'pending',
    });
    insertOutboxRow(ctx.database.sqlite, 'ref-early', 'queued');
    expect(outboxRow(ctx.database.sqlite, 'ref-early').state).toBe('queued');
    clock.advance(5000);
    const effects = markAccepted('ref-early');
    expect(effects).toEqual([
      expect.objectContaining({ kind: 'rejected', ref: 'ref-early', reason: 'late ref' }),
    ]);
    expect(outboxRow(ctx.database.sqlite, 'ref-early')).toMatchObject({
      state: 'rejected',
      decision_reason: 'late ref',
    });
    expect(events(ctx.database.sqlite)[0]).toMatchObject({
      outcome: 'applied',
      outbox_id: outboxRow(ctx.database.sqlite, 'ref-early').id,
    });
  });

  it('while the row is sending (its 2xx not recorded yet): pending, then applied by the accept', async () => {
    insertOutboxRow(ctx.database.sqlite, 'ref-s', 'sending');
    expect(await send(decisionPayload('ref-s', 'approved'))).toMatchObject({ outcome: 'pending' });
    expect(outboxRow(ctx.database.sqlite, 'ref-s').state).toBe('sending');
    markAccepted('ref-s');
    expect(outboxRow(ctx.database.sqlite, 'ref-s').state).toBe('approved');
  });

  it('two early contradicting decisions: the first applies, the second is a conflict', async () => {
    insertOutboxRow(ctx.database.sqlite, 'ref-2', 'sending');
    await send(decisionPayload('ref-2', 'approved'));
    await send(decisionPayload('ref-2', 'rejected'));
    const effects = markAccepted('ref-2');
    expect(effects.map((e) => e.kind)).toEqual(['approved', 'conflict']);
    expect(outboxRow(ctx.database.sqlite, 'ref-2').state).toBe('approved');
    expect(events(ctx.database.sqlite).map((e) => e.outcome)).toEqual(['applied', 'conflict']);
  });

  it('acceptedDecisions leaves a row that is not accepted alone', async () => {
    insertOutboxRow(ctx.database.sqlite, 'ref-q', 'sending');
    await send(decisionPayload('ref-q', 'approved'));
    const id = insertOutboxRow(ctx.database.sqlite, 'ref-q2', 'queued');
    const inbox = sqliteInboxStore(ctx.database.sqlite);
    const mask = (text: string) => text;
    expect(await inbox.afterAccepted({ id, ref: 'ref-q2', mask }, isoAt(NOW))).toEqual([]);
    // Another row's id under this ref: nothing either, and the pending decision waits.
    expect(await inbox.afterAccepted({ id, ref: 'ref-q', mask }, isoAt(NOW))).toEqual([]);
    expect(events(ctx.database.sqlite).map((e) => e.outcome)).toEqual(['pending']);
  });

  it('maintenance sweeps pending decisions of rows accepted by any path, and prunes old refusals', async () => {
    insertOutboxRow(ctx.database.sqlite, 'ref-w', 'sending');
    await send(decisionPayload('ref-w', 'approved'));
    ctx.database.sqlite
      .prepare(`UPDATE outbox SET state = 'accepted' WHERE marketplaceTransactionRef = 'ref-w'`)
      .run();
    const inbox = sqliteInboxStore(ctx.database.sqlite);
    await inbox.recordRejection(isoAt(NOW - 8 * 24 * 3600_000), 401, 'old');
    await inbox.recordRejection(isoAt(NOW - 6 * 24 * 3600_000), 401, 'recent');
    expect(await runInboxMaintenance({ ...ctx, store: inbox })).toEqual({ applied: 1, pruned: 1 });
    expect(outboxRow(ctx.database.sqlite, 'ref-w').state).toBe('approved');
    expect(ctx.database.sqlite.prepare('SELECT reason FROM webhook_rejections').all()).toEqual([
      { reason: 'recent' },
    ]);
  });
});

describe('deposits, unknown events, queries', () => {
  it('a deposit inserts custody ids (source webhook) once and requests a custody sync', async () => {
    const asked = vi.fn(async (_t: readonly SyncTarget[], _w: SyncTrigger) => undefined);
    syncs.serve(asked);
    const payload = {
      type: 'custody.deposit',
      data: { projectID: 12, issuanceId: 'ISS-3', unitIds: ['u1', 2, 'u1'] },
    };
    expect(await send(payload, 'dep-1')).toMatchObject({ outcome: 'applied' });
    expect(await send(payload, 'dep-1')).toMatchObject({ replay: true });
    const ids = ctx.database.sqlite
      .prepare('SELECT kind, id, source FROM custody_ids ORDER BY kind, id')
      .all();
    expect(ids).toEqual([
      { kind: 'issuances', id: 'ISS-3', source: 'webhook' },
      { kind: 'projects', id: '12', source: 'webhook' },
      { kind: 'units', id: '2', source: 'webhook' },
      { kind: 'units', id: 'u1', source: 'webhook' },
    ]);
    expect(asked).toHaveBeenCalledTimes(1);
    expect(asked).toHaveBeenCalledWith(['custody'], 'webhook');
  });

  it('unknown event types are stored as ignored and answered 2xx', async () => {
    expect(await send({ type: 'registry.maintenance', data: { window: 'sunday' } })).toMatchObject({
      outcome: 'ignored',
    });
    expect(events(ctx.database.sqlite)).toEqual([
      expect.objectContaining({ outcome: 'ignored', event_type: 'registry.maintenance' }),
    ]);
  });

  it('reads the ref at top level or under data, and the decision from status when the type is generic', async () => {
    insertOutboxRow(ctx.database.sqlite, 'top', 'accepted');
    insertOutboxRow(ctx.database.sqlite, 'via-status', 'accepted');
    await send({ event: 'transaction.approved', marketplaceTransactionRef: 'top' });
    await send({
      eventType: 'transaction.decided',
      data: { transactionReferenceId: 'via-status', status: 'REJECTED', reason: 'r' },
    });
    expect(outboxRow(ctx.database.sqlite, 'top').state).toBe('approved');
    expect(outboxRow(ctx.database.sqlite, 'via-status')).toMatchObject({
      state: 'rejected',
      decision_reason: 'r',
    });
  });

  it('honours configured field names', async () => {
    ctx.dispose();
    ctx = testContext({
      clock,
      overrides: {
        'webhook.secrets': [SECRET],
        'webhook.fields': { type: ['kind'], ref: ['payload.opRef'], status: ['outcome'], reason: ['why'] },
      },
    });
    app = createWebhookApp(ctx, {
      store: sqliteInboxStore(ctx.database.sqlite),
    });
    insertOutboxRow(ctx.database.sqlite, 'cfg', 'accepted');
    await send({ kind: 'decision', payload: { opRef: 'cfg' }, outcome: 'rejected', why: 'configured' });
    expect(outboxRow(ctx.database.sqlite, 'cfg')).toMatchObject({
      state: 'rejected',
      decision_reason: 'configured',
    });
  });
});
