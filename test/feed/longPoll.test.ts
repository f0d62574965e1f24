import { afterEach, describe, expect, it } from 'vitest';
import type { SqliteContext } from '../../src/app/sqliteStores.js';
import type { Component } from '../../src/context.js';
import { changeSignalFor, recordChanges } from '../../src/sqlite/changes.js';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { testContext } from '../helpers/context.js';
import { apiCaller } from '../helpers/http.js';
import { ManualTimers, startFeedApi } from './helpers.js';

const TOKEN = 'feed-test-token-0123456789';
let ctx: (SqliteContext & { dispose: () => void }) | undefined;
let api: Component | undefined;

afterEach(async () => {
  await api?.stop();
  ctx?.dispose();
  api = undefined;
  ctx = undefined;
});

async function setup() {
  ctx = testContext({ overrides: { 'api.listen': '127.0.0.1:0', 'api.token': TOKEN } });
  const timers = new ManualTimers();
  const started = await startFeedApi(ctx, timers);
  api = started.api;
  const sqlite = ctx.database.sqlite;
  /** A change committed the way the daemon commits: through the group commit. */
  const commit = (resource: string, recordId: string, kind = 'update') =>
    commitQueueFor(sqlite).submit(() =>
      recordChanges(sqlite, [{ resource, recordId, kind, at: '2026-01-01T00:00:00.000Z' }]),
    );
  return {
    ctx,
    base: started.base,
    timers,
    call: apiCaller(started.base, TOKEN),
    commit,
    signal: changeSignalFor(sqlite),
  };
}

/** Yields to the event loop until `check` holds (bounded), instead of sleeping for time to pass. */
async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 10_000 && !check(); i++) await new Promise((r) => setImmediate(r));
  if (!check()) throw new Error('condition never held');
}

describe('GET /v1/changes?wait=', () => {
  it('answers at once when a change follows `after`, and with wait=0 (the default) when none does', async () => {
    const { call, commit, timers } = await setup();
    await commit('projects', '1');
    const now = await call('GET', '/v1/changes?after=0&wait=30');
    expect(now.json).toMatchObject({ items: [{ seq: 1, record_id: '1' }], last: 1, head: 1 });
    expect(await call('GET', '/v1/changes?after=1')).toMatchObject({
      status: 200,
      json: { items: [], last: 1, head: 1 },
    });
    expect(timers.armed).toBe(0);
  });

  it('200 waiting clients are all answered by one commit, each with that change; no waiter is left', async () => {
    const { call, commit, signal, timers } = await setup();
    const polls = Array.from({ length: 200 }, () => call('GET', '/v1/changes?after=0&wait=60'));
    await until(() => signal.waiting === 200);
    expect(timers.armed).toBe(200);
    await commit('operations', 'ref-1', 'queued');
    for (const answer of await Promise.all(polls)) {
      expect(answer.json).toMatchObject({
        items: [{ seq: 1, resource: 'operations', kind: 'queued' }],
        last: 1,
      });
    }
    expect(signal.waiting).toBe(0);
    expect(timers.armed).toBe(0);
  });

  it('answers an empty page when the wait ends with nothing new', async () => {
    const { call, signal, timers } = await setup();
    const poll = call('GET', '/v1/changes?after=0&wait=5');
    await until(() => signal.waiting === 1);
    timers.fire(5_000);
    expect((await poll).json).toEqual({ items: [], last: 0, head: 0 });
    expect(signal.waiting).toBe(0);
  });

  it('a change of another resource does not answer a filtered wait; the next one of its own does', async () => {
    const { call, commit, signal } = await setup();
    const poll = call('GET', '/v1/changes?after=0&resource=operations&wait=60');
    await until(() => signal.waiting === 1);
    await commit('projects', 'p-1');
    // Woken, read nothing of its own, waiting again.
    await until(() => signal.waiting === 1 && signal.version === 1);
    await commit('operations', 'ref-9', 'approved');
    expect((await poll).json).toMatchObject({
      items: [{ seq: 2, record_id: 'ref-9', kind: 'approved' }],
      last: 2,
    });
  });

  it('a client that goes away takes its waiter and its timer with it', async () => {
    const { base, signal, timers } = await setup();
    const abort = new AbortController();
    const poll = fetch(`${base}/v1/changes?after=0&wait=60`, {
      headers: { authorization: `Bearer ${TOKEN}` },
      signal: abort.signal,
    }).catch((err: unknown) => err);
    await until(() => signal.waiting === 1);
    abort.abort();
    await poll;
    await until(() => signal.waiting === 0 && timers.armed === 0);
  });

  it('the API stopping answers waiting long-polls at once', async () => {
    const { call, signal } = await setup();
    const poll = call('GET', '/v1/changes?after=0&wait=60');
    await until(() => signal.waiting === 1);
    await api!.stop();
    api = undefined;
    expect((await poll).json).toEqual({ items: [], last: 0, head: 0 });
  });

  it.each([
    ['61', 'wait'],
    ['-1', 'wait'],
    ['1.5', 'wait'],
    ['01', 'wait'],
    ['0x10', 'wait'],
    ['', 'wait'],
  ])('wait=%s is a 400 naming %s', async (value, name) => {
    const { call, signal } = await setup();
    const answer = await call('GET', `/v1/changes?after=0&wait=${value}`);
    expect(answer.status).toBe(400);
    expect(answer.json.error).toMatch(new RegExp(`^${name}: `));
    expect(signal.waiting).toBe(0);
  });
  it('a query string asked again is answered alike: a kept parse for a valid one, a 400 each time for a bad one', async () => {
    const { call, commit } = await setup();
    await commit('projects', 'a');
    await commit('projects', 'b');
    for (let i = 0; i < 2; i++) {
      const page = await call('GET', '/v1/changes?after=1&limit=5');
      expect(page.status).toBe(200);
      expect(page.json).toMatchObject({ last: 2, head: 2 });
      expect((page.json.items as Array<{ seq: number }>).map((e) => e.seq)).toEqual([2]);
      const bad = await call('GET', '/v1/changes?after=1&limit=0');
      expect(bad.status).toBe(400);
      expect(bad.json.error).toMatch(/^limit: /);
    }
    // Another after is another question, not the kept answer of the first.
    const other = await call('GET', '/v1/changes?after=0&limit=5');
    expect((other.json.items as Array<{ seq: number }>).map((e) => e.seq)).toEqual([1, 2]);
  });
});
