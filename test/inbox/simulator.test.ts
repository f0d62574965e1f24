import { afterEach, describe, expect, it } from 'vitest';
import type { SqliteContext } from '../../src/app/sqliteStores.js';
import { isoAt } from '../../src/common/clock.js';
import { SyncRequests } from '../../src/common/syncRequests.js';
import { acceptedDecisions } from '../../src/inbox/correlate.js';
import { createWebhookComponent, type WebhookComponent } from '../../src/inbox/listener.js';
import { stateChangeSinkOf } from '../../src/sqlite/changes.js';
import { driveSqlite } from '../../src/sqlite/commitQueue.js';

/** The mirror's side of sync requests, as daemon.ts links it; each test serves it as it needs. */
let syncs = new SyncRequests();

import { createDispatcherComponent } from '../../src/outbox/dispatcher.js';
import {
  REJECT_REASON,
  type Simulator,
  startSimulator,
  type WebhookPolicy,
} from '../../src/simulator/index.js';
import { sqliteInboxStore } from '../../src/sqlite/inboxStore.js';
import { testContext } from '../helpers/context.js';
import { enqueueOperation, sqliteDispatcher, tokenization } from '../outbox/fixtures.js';
import { events, insertOutboxRow, outboxRow, SECRET } from './helpers.js';

let sim: Simulator | undefined;
let ctx: (SqliteContext & { dispose: () => void }) | undefined;
let listener: WebhookComponent | undefined;
const stops: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
  await sim?.close();
  ctx?.dispose();
  sim = undefined;
  ctx = undefined;
});

async function setup(webhook: { policy?: WebhookPolicy; beforeResponse?: boolean }) {
  sim = await startSimulator({ webhook: { secret: SECRET, delayMs: 0, ...webhook } });
  ctx = testContext({
    overrides: {
      'webhook.secrets': [SECRET],
      'webhook.listen': '127.0.0.1:0',
      'operator.url': sim.url,
      'operator.api_key': 'sim-api-key',
      'outbox.poll_ms': 20,
    },
  });
  syncs = new SyncRequests();
  listener = createWebhookComponent(ctx, {
    store: sqliteInboxStore(ctx.database.sqlite),
    requestSync: syncs.request,
  });
  await listener.start();
  stops.push(() => listener!.stop());
  sim.webhooks.configure({ url: listener.address()!.url });
  return { sim, ctx };
}

/** Polls a condition (bounded), instead of sleeping for time to pass. */
async function until(condition: () => boolean, what: string, attempts = 500): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    if (condition()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A valid notification, as the outbox's own tests build it. */
const notification = (ref: string) => tokenization(ref);

describe('with the simulator as the operator', () => {
  it('webhook arrives before the 2xx is recorded: kept pending, applied when the row becomes accepted', async () => {
    const { sim, ctx } = await setup({ policy: 'reject', beforeResponse: true });
    const id = insertOutboxRow(ctx.database.sqlite, 'race-1', 'sending');
    const res = await fetch(`${sim.url}/integration/v1/notify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', apikey: 'sim-api-key' },
      body: JSON.stringify(notification('race-1')),
    });
    expect(res.ok).toBe(true);
    // The simulator delivered the decision before answering /notify.
    expect(events(ctx.database.sqlite)).toEqual([
      expect.objectContaining({ outcome: 'pending', decision: 'rejected', outbox_id: id }),
    ]);
    expect(outboxRow(ctx.database.sqlite, 'race-1').state).toBe('sending');
    const { sqlite } = ctx.database;
    const effects = sqlite.transaction(() => {
      sqlite
        .prepare(`UPDATE outbox SET state = 'accepted', accepted_at = ? WHERE id = ?`)
        .run(isoAt(Date.now()), id);
      const at = { now: isoAt(Date.now()), sink: stateChangeSinkOf(sqlite) };
      return driveSqlite(sqlite, acceptedDecisions({ id, ref: 'race-1', mask: (text) => text }, at));
    })();
    expect(effects).toEqual([expect.objectContaining({ kind: 'rejected', reason: REJECT_REASON })]);
    expect(outboxRow(ctx.database.sqlite, 'race-1')).toMatchObject({
      state: 'rejected',
      decision_reason: REJECT_REASON,
    });
  });

  it('with the real dispatcher: decisions land on their operations, including the early-webhook race', async () => {
    const { sim, ctx } = await setup({ policy: 'alternate', beforeResponse: true });
    const dispatcher = createDispatcherComponent(ctx, sqliteDispatcher(ctx));
    await dispatcher.start();
    stops.push(() => dispatcher.stop());
    const refs = Array.from({ length: 6 }, (_, i) => `e2e-${i}`);
    for (const ref of refs) expect(enqueueOperation(ctx, notification(ref)).status).toBe(201);
    const finished = () =>
      refs.every((ref) => ['approved', 'rejected'].includes(outboxRow(ctx.database.sqlite, ref).state));
    await until(finished, 'every operation decided');
    await sim.webhooksIdle();
    const states = refs.map((ref) => outboxRow(ctx.database.sqlite, ref).state);
    expect(states.filter((s) => s === 'approved')).toHaveLength(3);
    expect(states.filter((s) => s === 'rejected')).toHaveLength(3);
    expect(events(ctx.database.sqlite).every((e) => e.outcome === 'applied')).toBe(true);
    expect(sim.webhooksSent.every((w) => w.delivered)).toBe(true);
  });

  it('a deposit webhook from the simulator records custody ids and asks for a custody sync', async () => {
    const { sim, ctx } = await setup({});
    const asked: string[] = [];
    syncs.serve((targets, trigger) => {
      asked.push(`${targets.join(',')}:${trigger}`);
    });
    const sent = await sim.sendDepositWebhook({ projectID: 5, issuanceId: '9', unitIds: [11, 12] });
    expect(sent.delivered).toBe(true);
    const ids = ctx.database.sqlite
      .prepare(`SELECT kind, id FROM custody_ids WHERE source = 'webhook' ORDER BY kind, id`)
      .all();
    expect(ids).toEqual([
      { kind: 'issuances', id: '9' },
      { kind: 'projects', id: '5' },
      { kind: 'units', id: '11' },
      { kind: 'units', id: '12' },
    ]);
    expect(asked).toEqual(['custody:webhook']);
  });
});
