import { MessageChannel } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import type { SqliteContext } from '../../src/app/sqliteStores.js';
import type { Component } from '../../src/context.js';
import type { FeedMessage } from '../../src/db/changeSignal.js';
import { forwardFeed } from '../../src/feed/bridge.js';
import { changeSignalFor, recordChanges } from '../../src/sqlite/changes.js';
import { openDatabase } from '../../src/sqlite/open.js';
import { testContext } from '../helpers/context.js';
import { apiCaller } from '../helpers/http.js';
import { ManualTimers, startFeedApi } from './helpers.js';

const TOKEN = 'feed-test-token-0123456789';
let ctx: (SqliteContext & { dispose: () => void }) | undefined;
let api: Component | undefined;
const closes: Array<() => void> = [];

afterEach(async () => {
  for (const close of closes.splice(0)) close();
  await api?.stop();
  ctx?.dispose();
  api = undefined;
  ctx = undefined;
});

describe('commits on another connection (a worker thread) wake the main thread over a MessagePort', () => {
  it('a long-poll waiting in the API is answered by a commit on the other connection', async () => {
    ctx = testContext({ overrides: { 'api.listen': '127.0.0.1:0', 'api.token': TOKEN } });
    const started = await startFeedApi(ctx, new ManualTimers());
    api = started.api;
    // The worker's own connection to the same file, and the port pair the daemon would wire.
    const other = openDatabase(ctx.config.database.path, { migrate: false });
    const { port1, port2 } = new MessageChannel();
    const main = changeSignalFor(ctx.database.sqlite);
    // The main thread's side, as the worker's host announces what its port brings.
    port2.on('message', (message: FeedMessage) => main.announce(message.seq));
    closes.push(
      () => other.close(),
      () => port1.close(),
      forwardFeed(changeSignalFor(other.sqlite), port1),
    );
    const poll = apiCaller(started.base, TOKEN)('GET', '/v1/changes?after=0&resource=operations&wait=60');
    for (let i = 0; i < 10_000 && main.waiting === 0; i++) await new Promise((r) => setImmediate(r));
    other.sqlite.transaction(() =>
      recordChanges(other.sqlite, [
        { resource: 'operations', recordId: 'w-1', kind: 'accepted', at: '2026-01-01T00:00:00.000Z' },
      ]),
    )();
    expect((await poll).json).toMatchObject({ items: [{ seq: 1, record_id: 'w-1', kind: 'accepted' }] });
  });
});
