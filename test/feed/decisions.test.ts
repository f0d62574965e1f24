import { afterEach, describe, expect, it } from 'vitest';
import type { SqliteContext } from '../../src/app/sqliteStores.js';
import type { Component } from '../../src/context.js';
import { createWebhookComponent } from '../../src/inbox/listener.js';
import { createDispatcherComponent } from '../../src/outbox/dispatcher.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { changeSignalFor } from '../../src/sqlite/changes.js';
import { sqliteInboxStore } from '../../src/sqlite/inboxStore.js';
import { testContext } from '../helpers/context.js';
import { apiCaller } from '../helpers/http.js';
import { SECRET } from '../inbox/helpers.js';
import { sqliteDispatcher, tokenization } from '../outbox/fixtures.js';
import { ManualTimers, openStream, startFeedApi } from './helpers.js';

const TOKEN = 'feed-test-token-0123456789';

let sim: Simulator | undefined;
let ctx: (SqliteContext & { dispose: () => void }) | undefined;
const started: Component[] = [];

afterEach(async () => {
  for (const c of started.splice(0).reverse()) await c.stop();
  await sim?.close();
  ctx?.dispose();
  sim = undefined;
  ctx = undefined;
});

/** The whole path: API, dispatcher, simulator as the operator, its decision webhook, the listener. */
async function setup(policy: 'approve' | 'reject') {
  sim = await startSimulator({ webhook: { secret: SECRET, delayMs: 0, policy } });
  ctx = testContext({
    overrides: {
      'api.listen': '127.0.0.1:0',
      'api.token': TOKEN,
      'operator.marketplace_id': 'mkt-1',
      'webhook.secrets': [SECRET],
      'webhook.listen': '127.0.0.1:0',
      'operator.url': sim.url,
      'operator.api_key': 'sim-api-key',
      'outbox.poll_ms': 20,
    },
  });
  const timers = new ManualTimers();
  const { api, base } = await startFeedApi(ctx, timers);
  started.push(api);
  const listener = createWebhookComponent(ctx, {
    store: sqliteInboxStore(ctx.database.sqlite),
  });
  await listener.start();
  started.push(listener);
  sim.webhooks.configure({ url: listener.address()!.url });
  return { ctx, base, call: apiCaller(base, TOKEN), timers };
}

/** Starts the dispatcher: from then on the operation is sent, accepted, and decided. */
async function startDispatcher(ctx: SqliteContext) {
  const dispatcher = createDispatcherComponent(ctx, sqliteDispatcher(ctx));
  await dispatcher.start();
  started.push(dispatcher);
}

describe('decisions reach internal apps through the change feed', () => {
  it('a rejection webhook shows up in the feed, through a long-poll waiting on it, and on an event stream', async () => {
    const { ctx, base, call, timers } = await setup('reject');
    expect((await call('POST', '/v1/operations', tokenization('feed-rej-1'))).status).toBe(201);

    const first = await call('GET', '/v1/changes?resource=operations');
    expect(first.json.items).toEqual([
      expect.objectContaining({ resource: 'operations', record_id: 'feed-rej-1', kind: 'queued' }),
    ]);
    const queuedSeq = first.json.last as number;

    // An event stream and a long-poll both wait before anything is sent.
    const stream = openStream(base, `/v1/changes/stream?after=${queuedSeq}&resource=operations`, TOKEN);
    await stream.ready;
    const polls = [1, 2, 3].map(() =>
      call('GET', `/v1/changes?after=${queuedSeq}&resource=operations&wait=60`),
    );
    const signal = changeSignalFor(ctx.database.sqlite);
    await vitestUntil(() => signal.waiting >= 4);

    await startDispatcher(ctx);
    // The wait timers are never fired: an answer can only come from a commit waking the waiters.
    for (const answer of await Promise.all(polls)) {
      expect(answer.status).toBe(200);
      expect(answer.json.items[0]).toMatchObject({ record_id: 'feed-rej-1', kind: 'accepted' });
    }
    const acceptedSeq = (await polls[0]!).json.items[0].seq as number;
    const decision = await call('GET', `/v1/changes?after=${acceptedSeq}&resource=operations&wait=60`);
    expect(decision.json.items).toEqual([
      expect.objectContaining({ record_id: 'feed-rej-1', kind: 'rejected', seq: expect.any(Number) }),
    ]);

    await stream.until((events) => events.some((e) => e.data?.includes('"rejected"')), 'the rejection');
    const kinds = stream.events.map((e) => JSON.parse(e.data!) as { kind: string; seq: number });
    expect(kinds.map((k) => k.kind)).toEqual(['accepted', 'rejected']);
    expect(stream.events.map((e) => Number(e.id))).toEqual(kinds.map((k) => k.seq));
    expect(stream.response!.headers['content-type']).toMatch(/^text\/event-stream/);
    stream.close();

    // The whole life in the feed, without `sending`, and matching the operation's own state.
    const all = await call('GET', '/v1/changes?resource=operations');
    expect(all.json.items.map((i: { kind: string }) => i.kind)).toEqual(['queued', 'accepted', 'rejected']);
    expect((await call('GET', '/v1/operations/feed-rej-1')).json.state).toBe('rejected');
    // The closed stream's heartbeat timer goes with it.
    await vitestUntil(() => timers.armed === 0);
  });

  it('an approval and a cancel by a person are in the feed too; other resources filter them out', async () => {
    const { ctx, call } = await setup('approve');
    await call('POST', '/v1/operations', tokenization('feed-ok-1', { unitId: 1, issuanceId: 1 }));
    await call('POST', '/v1/operations', tokenization('feed-cancel-1', { unitId: 2, issuanceId: 2 }));
    expect((await call('POST', '/v1/operations/feed-cancel-1/cancel', {})).status).toBe(200);
    await startDispatcher(ctx);
    let after = 0;
    const seen: string[] = [];
    while (!seen.includes('feed-ok-1:approved')) {
      const page = await call('GET', `/v1/changes?after=${after}&resource=operations&wait=60`);
      for (const i of page.json.items) seen.push(`${i.record_id}:${i.kind}`);
      after = page.json.last;
    }
    expect(seen).toEqual([
      'feed-ok-1:queued',
      'feed-cancel-1:queued',
      'feed-cancel-1:cancelled',
      'feed-ok-1:accepted',
      'feed-ok-1:approved',
    ]);
    expect((await call('GET', '/v1/changes?resource=projects')).json.items).toEqual([]);
  });
});

/** Yields to the event loop until `check` holds (bounded), instead of sleeping for time to pass. */
async function vitestUntil(check: () => boolean): Promise<void> {
  for (let i = 0; i < 10_000 && !check(); i++) await new Promise((r) => setImmediate(r));
  if (!check()) throw new Error('condition never held');
}
