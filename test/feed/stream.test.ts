import { afterEach, describe, expect, it } from 'vitest';
import type { AppContext, Component } from '../../src/context.js';
import { ChangeSignal, changeSignalFor } from '../../src/db/changeSignal.js';
import { recordChanges } from '../../src/db/changes.js';
import { commitQueueFor } from '../../src/db/commitQueue.js';
import { sqliteFeedReads } from '../../src/feed/reads.js';
import { HEARTBEAT, streamFeed } from '../../src/feed/stream.js';
import { testContext } from '../helpers/context.js';
import { apiCaller } from '../helpers/http.js';
import { ManualTimers, openStream, startFeedApi } from './helpers.js';

const TOKEN = 'feed-test-token-0123456789';
const AT = '2026-01-01T00:00:00.000Z';
let ctx: (AppContext & { dispose: () => void }) | undefined;
let api: Component | undefined;

afterEach(async () => {
  await api?.stop();
  ctx?.dispose();
  api = undefined;
  ctx = undefined;
});

async function setup(heartbeatMs?: number) {
  ctx = testContext({ overrides: { 'api.listen': '127.0.0.1:0', 'api.token': TOKEN } });
  const timers = new ManualTimers();
  const started = await startFeedApi(ctx, timers, heartbeatMs);
  api = started.api;
  const sqlite = ctx.database.sqlite;
  const commit = (n: number, resource = 'projects') =>
    commitQueueFor(sqlite).submit(() =>
      recordChanges(
        sqlite,
        Array.from({ length: n }, (_, i) => ({ resource, recordId: `r-${i}`, kind: 'insert', at: AT })),
      ),
    );
  const stream = (path: string, headers?: Record<string, string>) =>
    openStream(started.base, path, TOKEN, headers);
  return {
    ctx,
    timers,
    stream,
    commit,
    call: apiCaller(started.base, TOKEN),
    signal: changeSignalFor(sqlite),
  };
}

const seqs = (events: Array<{ id?: string }>) => events.filter((e) => e.id).map((e) => Number(e.id));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('GET /v1/changes/stream', () => {
  it('sends the backlog after `after`, then each change as it commits, one event per change', async () => {
    const { stream, commit } = await setup();
    await commit(250);
    const s = stream('/v1/changes/stream?after=10');
    await s.until((e) => seqs(e).length === 240, 'the backlog');
    await commit(3, 'operations');
    await s.until((e) => seqs(e).length === 243, 'the new changes');
    expect(seqs(s.events)).toEqual(range(11, 253));
    expect(JSON.parse(s.events.at(-1)!.data!)).toEqual({
      seq: 253,
      resource: 'operations',
      record_id: 'r-2',
      kind: 'insert',
      at: AT,
    });
    s.close();
  });

  it('resumes from Last-Event-ID, which wins over `after` (a browser reconnecting sends it)', async () => {
    const { stream, commit } = await setup();
    await commit(20);
    const s = stream('/v1/changes/stream?after=2', { 'last-event-id': '15' });
    await s.until((e) => seqs(e).length === 5, 'the rest');
    expect(seqs(s.events)).toEqual(range(16, 20));
    s.close();
  });

  it('filters by resource', async () => {
    const { stream, commit } = await setup();
    await commit(2, 'projects');
    await commit(2, 'operations');
    const s = stream('/v1/changes/stream?resource=operations');
    await s.until((e) => seqs(e).length === 2, 'the operations');
    expect(seqs(s.events)).toEqual([3, 4]);
    s.close();
  });

  it('sends a keep-alive comment when the heartbeat interval passes idle', async () => {
    const { stream, timers, signal } = await setup(15_000);
    const s = stream('/v1/changes/stream');
    await s.ready;
    for (let i = 0; i < 10_000 && signal.waiting === 0; i++) await new Promise((r) => setImmediate(r));
    timers.fire(15_000);
    await s.until((e) => e.some((x) => x.comment === 'keep-alive'), 'a heartbeat');
    s.close();
  });

  it('a slow client that resumes reading gets every change in order', async () => {
    const { stream, commit } = await setup();
    const s = stream('/v1/changes/stream');
    const res = await s.ready;
    res.pause();
    for (let i = 0; i < 10; i++) await commit(2_000);
    res.resume();
    await s.until((e) => seqs(e).length === 20_000, 'every change');
    expect(seqs(s.events)).toEqual(range(1, 20_000));
    s.close();
  });

  it('a bad Last-Event-ID or `after` is a 400 naming it', async () => {
    const { call, ctx } = await setup();
    const base = ctx.listeners.get('api')!;
    const bad = await fetch(`${base}/v1/changes/stream`, {
      headers: { authorization: `Bearer ${TOKEN}`, 'last-event-id': 'abc' },
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: string }).error).toMatch(/^Last-Event-ID: /);
    const after = await call('GET', '/v1/changes/stream?after=-1');
    expect(after.status).toBe(400);
    expect(after.json.error).toMatch(/^after: /);
  });

  it('the API stopping ends open streams', async () => {
    const { stream } = await setup();
    const s = stream('/v1/changes/stream');
    const res = await s.ready;
    const ended = new Promise<void>((resolve) => res.on('end', () => resolve()));
    await api!.stop();
    api = undefined;
    await ended;
  });
});

describe('streamFeed (backpressure)', () => {
  it('reads the next page only once the previous write was taken: a stalled client costs one page', async () => {
    ctx = testContext();
    const sqlite = ctx.database.sqlite;
    sqlite.transaction(recordChanges)(
      sqlite,
      Array.from({ length: 1_000 }, (_, i) => ({
        resource: 'projects',
        recordId: `${i}`,
        kind: 'insert',
        at: AT,
      })),
    );
    const writes: string[] = [];
    let release!: () => void;
    const ended = new AbortController();
    const timers = new ManualTimers();
    const done = streamFeed(
      {
        feed: { ...sqliteFeedReads(sqlite), signal: new ChangeSignal() },
        schedule: timers.schedule,
        heartbeatMs: 1,
        pageSize: 100,
        ended: ended.signal,
      },
      {
        write: (text) => {
          writes.push(text);
          return new Promise<void>((resolve) => {
            release = resolve;
          });
        },
      },
      { after: 0 },
    );
    for (let i = 0; i < 100; i++) await new Promise((r) => setImmediate(r));
    // One page handed over, none read behind it while the client does not take it.
    expect(writes).toHaveLength(1);
    expect(writes[0]!.match(/^id: /gm)).toHaveLength(100);
    for (let page = 2; page <= 10; page++) {
      release();
      for (let i = 0; i < 5 && writes.length < page; i++) await new Promise((r) => setImmediate(r));
      expect(writes).toHaveLength(page);
    }
    release();
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(writes).toHaveLength(10);
    // Idle now: the heartbeat is the next thing written.
    timers.fire();
    for (let i = 0; i < 5 && writes.length < 11; i++) await new Promise((r) => setImmediate(r));
    expect(writes[10]).toBe(HEARTBEAT);
    ended.abort();
    release();
    await done;
    expect(timers.armed).toBe(0);
  });
});
