import { afterEach, describe, expect, it } from 'vitest';
import { sqliteFeedReads } from '../../src/app/sqliteFeedReads.js';
import type { SqliteContext } from '../../src/app/sqliteStores.js';
import type { Component } from '../../src/context.js';
import { ChangeSignal } from '../../src/db/changeSignal.js';
import type { FeedReads } from '../../src/feed/feedReads.js';
import { type EventSink, HEARTBEAT, nextMove, streamFeed } from '../../src/feed/stream.js';
import { changeSignalFor, recordChanges } from '../../src/sqlite/changes.js';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { testContext } from '../helpers/context.js';
import { apiCaller } from '../helpers/http.js';
import { ManualTimers, openStream, startFeedApi } from './helpers.js';

const TOKEN = 'feed-test-token-0123456789';
const AT = '2026-01-01T00:00:00.000Z';
let ctx: (SqliteContext & { dispose: () => void }) | undefined;
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
    base: started.base,
    timers,
    stream,
    commit,
    call: apiCaller(started.base, TOKEN),
    signal: changeSignalFor(sqlite),
  };
}

const seqs = (events: Array<{ id?: string }>) => events.filter((e) => e.id).map((e) => Number(e.id));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const seqsOf = (chunks: string[]) => [...chunks.join('').matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));

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
      recordId: 'r-2',
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
    const { call, base } = await setup();
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

/** A connection the test drains by hand: it holds what was written until `take()`. */
class HeldSink implements EventSink {
  readonly chunks: string[] = [];
  held = 0;
  closed = false;
  private readonly drainListeners = new Set<() => void>();
  constructor(private readonly highWater: number) {}
  write(chunk: Uint8Array): boolean {
    this.chunks.push(Buffer.from(chunk).toString());
    this.held += chunk.byteLength;
    return this.held < this.highWater;
  }
  get backlog(): number {
    return this.held;
  }
  onDrain(fn: () => void): () => void {
    this.drainListeners.add(fn);
    return () => this.drainListeners.delete(fn);
  }
  /** The client reads everything held; the connection says it drained, as Node's does, if it was full. */
  take(): void {
    const wasFull = this.held >= this.highWater;
    this.held = 0;
    if (wasFull) for (const fn of this.drainListeners) fn();
  }
  get listening(): number {
    return this.drainListeners.size;
  }
  close(): void {
    this.closed = true;
  }
}

const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
};

function backlogFeed(n: number) {
  ctx = testContext();
  const sqlite = ctx.database.sqlite;
  const rows = (from: number, count: number) =>
    Array.from({ length: count }, (_, i) => ({
      resource: 'projects',
      recordId: `${from + i}`,
      kind: 'insert',
      at: AT,
    }));
  sqlite.transaction(recordChanges)(sqlite, rows(0, n));
  const signal = new ChangeSignal();
  const commit = (count: number) => {
    sqlite.transaction(recordChanges)(sqlite, rows(n, count));
    signal.announce(0);
  };
  return { feed: { ...sqliteFeedReads(sqlite), signal }, commit };
}

function run(feed: FeedReads, sink: EventSink, maxBacklogBytes: number) {
  const ended = new AbortController();
  const timers = new ManualTimers();
  const done = streamFeed(
    {
      feed,
      schedule: timers.schedule,
      heartbeatMs: 15_000,
      pageSize: 100,
      maxBacklogBytes,
      ended: ended.signal,
    },
    sink,
    { after: 0 },
  );
  return { done, timers, end: () => ended.abort() };
}

describe('streamFeed (backpressure and the backlog cap)', () => {
  it('reads the next page only once the client drained: a slow client catching up costs its buffer', async () => {
    const { feed } = backlogFeed(1_000);
    // Held past 1 byte: every page backs the client up until it reads.
    const sink = new HeldSink(1);
    const s = run(feed, sink, 10_000_000);
    await settle();
    expect(sink.chunks).toHaveLength(1);
    expect(sink.chunks[0]!.match(/^id: /gm)).toHaveLength(100);
    for (let page = 2; page <= 10; page++) {
      sink.take();
      await settle();
      expect(sink.chunks).toHaveLength(page);
    }
    sink.take();
    await settle();
    expect(sink.chunks).toHaveLength(10);
    // Idle now: a tick finds the writes since the last, the next finds none, and a heartbeat goes.
    s.timers.fire();
    await settle();
    expect(sink.chunks).toHaveLength(10);
    s.timers.fire();
    await settle();
    expect(sink.chunks[10]).toBe(HEARTBEAT);
    s.end();
    expect(await s.done).toBe('ended');
    expect(s.timers.armed).toBe(0);
    expect(sink.listening).toBe(0);
    expect(seqsOf(sink.chunks)).toEqual(range(1, 1_000));
  });

  it('a backed-up client gets each commit anyway, and is closed once its backlog passes the cap', async () => {
    const { feed, commit } = backlogFeed(100);
    const sink = new HeldSink(1);
    const s = run(feed, sink, 40_000);
    await settle();
    expect(sink.chunks).toHaveLength(1);
    let commits = 0;
    while (!sink.closed && commits < 1_000) {
      commit(100);
      commits++;
      await settle();
    }
    expect(await s.done).toBe('behind');
    expect(sink.closed).toBe(true);
    // Closed at the first write past the cap: at most one page over it.
    expect(sink.held).toBeGreaterThan(40_000);
    expect(sink.held).toBeLessThan(40_000 + 100 * 200);
  });

  it('a backed-up client that takes nothing for a whole heartbeat tick is closed as stalled', async () => {
    const { feed } = backlogFeed(300);
    const sink = new HeldSink(1);
    const s = run(feed, sink, 10_000_000);
    await settle();
    expect(sink.chunks).toHaveLength(1);
    // The first tick finds the write since the stream began; the next finds nothing taken.
    s.timers.fire(15_000);
    await settle();
    expect(sink.closed).toBe(false);
    s.timers.fire(15_000);
    expect(await s.done).toBe('stalled');
    expect(sink.closed).toBe(true);
    expect(s.timers.armed).toBe(0);
  });
});

describe('nextMove', () => {
  const idle = { more: false, committed: false, backedUp: false, beatDue: false, backlog: 0 };
  it.each([
    [{}, 'wait'],
    [{ committed: true }, 'read'],
    [{ more: true }, 'read'],
    [{ beatDue: true }, 'heartbeat'],
    [{ backedUp: true }, 'wait-drain'],
    [{ backedUp: true, more: true }, 'wait-drain'],
    [{ backedUp: true, committed: true }, 'read'],
    [{ backedUp: true, beatDue: true }, 'close-stalled'],
    [{ backedUp: true, committed: true, backlog: 1_001 }, 'close-behind'],
    [{ backedUp: true, backlog: 1_001 }, 'close-behind'],
    [{ backedUp: true, committed: true, backlog: 1_000 }, 'read'],
    [{ backlog: 5_000, more: true }, 'read'],
  ] as const)('%o -> %s', (seen, move) => {
    expect(nextMove({ ...idle, ...seen }, 1_000)).toBe(move);
  });
});
