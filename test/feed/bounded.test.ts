import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { sqliteFeedReads } from '../../src/app/sqliteFeedReads.js';
import type { SqliteContext } from '../../src/app/sqliteStores.js';
import type { Component } from '../../src/context.js';
import type { FeedReads } from '../../src/feed/feedReads.js';
import { changeSignalFor, recordChanges } from '../../src/sqlite/changes.js';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { testContext } from '../helpers/context.js';
import { capturingLogger } from '../outbox/fixtures.js';
import { ManualTimers, openStream, startFeedApi } from './helpers.js';

/**
 * Issue 25 item 7: what a feed client can hold is bounded. A stream whose client does not read is
 * closed past its buffer cap and resumes exactly from Last-Event-ID; streams and waiting long-polls
 * past their caps get 503 + Retry-After; readers woken together share one read of the page.
 */

const TOKEN = 'feed-test-token-0123456789';
const AT = '2026-01-01T00:00:00.000Z';
let ctx: (SqliteContext & { dispose: () => void }) | undefined;
let api: Component | undefined;
const sockets: net.Socket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await api?.stop();
  ctx?.dispose();
  api = undefined;
  ctx = undefined;
});

/** The store's reads, counting the page reads that reach it. */
function countingReads(inner: FeedReads) {
  const counted = { reads: 0 };
  const feed: FeedReads = {
    signal: inner.signal,
    head: () => inner.head(),
    read(q) {
      counted.reads++;
      return inner.read(q);
    },
  };
  return { feed, counted };
}

async function setup(overrides: Record<string, unknown> = {}) {
  ctx = testContext({ overrides: { 'api.listen': '127.0.0.1:0', 'api.token': TOKEN, ...overrides } });
  const capture = capturingLogger('info');
  ctx.log = capture.log;
  const sqlite = ctx.database.sqlite;
  const { feed, counted } = countingReads(sqliteFeedReads(sqlite));
  const timers = new ManualTimers();
  const started = await startFeedApi(ctx, timers, 15_000, feed);
  api = started.api;
  const port = Number(new URL(started.base).port);
  let n = 0;
  /** Commits `count` changes through the group commit, as the daemon does. */
  const commit = (count: number) =>
    commitQueueFor(sqlite).submit(() =>
      recordChanges(
        sqlite,
        Array.from({ length: count }, () => ({
          resource: 'projects',
          recordId: `r-${++n}`,
          kind: 'insert',
          at: AT,
        })),
      ),
    );
  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(`${started.base}${path}`, { headers: { authorization: `Bearer ${TOKEN}`, ...headers } });
  return {
    base: started.base,
    port,
    commit,
    counted,
    get,
    logLines: capture.lines,
    signal: changeSignalFor(sqlite),
    stream: (path: string, headers?: Record<string, string>) =>
      openStream(started.base, path, TOKEN, headers),
  };
}

/** Yields to the event loop until `check` holds (bounded), instead of sleeping for time to pass. */
async function until(check: () => boolean, what: string, tries = 20_000): Promise<void> {
  for (let i = 0; i < tries && !check(); i++) await new Promise((r) => setImmediate(r));
  if (!check()) throw new Error(`never: ${what}`);
}

/** A client that asks for the stream and never reads until told to; then reads to the end. */
function stalledClient(port: number, path: string) {
  const socket = net.connect(port, '127.0.0.1');
  sockets.push(socket);
  socket.write(`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${TOKEN}\r\n\r\n`);
  socket.pause();
  return {
    /** Reads what reached the socket before the server closed it: the seqs of its whole events. */
    readToEnd: () =>
      new Promise<number[]>((resolve) => {
        let text = '';
        socket.setEncoding('utf8');
        socket.on('data', (d: string) => {
          text += d;
        });
        socket.on('close', () =>
          resolve([...text.matchAll(/id: (\d+)\ndata: [^\n]*\n\n/g)].map((m) => Number(m[1]))),
        );
        socket.resume();
      }),
  };
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const seqs = (events: Array<{ id?: string }>) => events.filter((e) => e.id).map((e) => Number(e.id));
const closedBehind = (lines: string[]) =>
  lines.some((l) => l.includes('"api.stream_closed"') && l.includes('"behind"'));

describe('an event stream whose client does not read', () => {
  it('is closed once its backlog passes api.stream_buffer_bytes; Last-Event-ID resumes with nothing lost or repeated', async () => {
    const { port, commit, logLines, stream, signal } = await setup({ 'api.stream_buffer_bytes': 131_072 });
    await commit(100);
    const stalled = stalledClient(port, '/v1/changes/stream?after=0');
    await until(() => signal.waiting === 1, 'the stream waiting at the head');
    // Each commit is written to the backed-up client (a page at most): the kernel's socket
    // buffers fill first, then the daemon's, until past the cap the client is closed.
    let commits = 0;
    while (!closedBehind(logLines) && commits < 5_000) {
      await commit(100);
      commits++;
      if (commits % 10 === 0) await new Promise((r) => setImmediate(r));
    }
    await until(() => closedBehind(logLines), 'the stream closed as behind');
    const total = 100 * (commits + 1);
    const seen = await stalled.readToEnd();
    // What reached the client is a prefix of the feed, ending at a whole event.
    expect(seen.length).toBeGreaterThan(0);
    expect(seen).toEqual(range(1, seen.length));
    expect(seen.length).toBeLessThan(total);
    // It reconnects as EventSource does, and gets exactly the rest.
    const again = stream('/v1/changes/stream', { 'last-event-id': String(seen.at(-1)) });
    await again.until((e) => seqs(e).at(-1) === total, 'the rest of the feed');
    expect([...seen, ...seqs(again.events)]).toEqual(range(1, total));
    again.close();
  });
});

describe('caps on clients held open', () => {
  it('a stream past api.max_streams is a 503 with Retry-After; a slot is free again once a stream closes', async () => {
    const { stream, get } = await setup({ 'api.max_streams': 2 });
    const first = stream('/v1/changes/stream');
    const second = stream('/v1/changes/stream');
    await Promise.all([first.ready, second.ready]);
    const refused = await get('/v1/changes/stream');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(((await refused.json()) as { error: string }).error).toMatch(/api\.max_streams/);
    first.close();
    // The server sees it go and gives its slot back: a new stream is admitted.
    let third = await get('/v1/changes/stream');
    for (let i = 0; i < 200 && third.status === 503; i++) {
      await third.body?.cancel();
      await new Promise((r) => setImmediate(r));
      third = await get('/v1/changes/stream');
    }
    expect(third.status).toBe(200);
    await third.body?.cancel();
    second.close();
  });

  it('a long-poll past api.max_long_polls is a 503 with Retry-After; a page without wait is still served', async () => {
    const { get, commit, signal } = await setup({ 'api.max_long_polls': 1 });
    const waiting = get('/v1/changes?after=0&wait=60');
    await until(() => signal.waiting === 1, 'the long-poll waiting');
    const refused = await get('/v1/changes?after=0&wait=60');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(((await refused.json()) as { error: string }).error).toMatch(/api\.max_long_polls/);
    expect((await get('/v1/changes?after=0')).status).toBe(200);
    await commit(1);
    expect(((await (await waiting).json()) as { items: unknown[] }).items).toHaveLength(1);
    // Its slot is back: the next long-poll is admitted (and answered at once, the change follows 0).
    expect((await get('/v1/changes?after=0&wait=60')).status).toBe(200);
  });
});

describe('readers share reads', () => {
  it('100 streams and 100 long-polls waiting at the head, woken by one commit, cause one page read', async () => {
    const { stream, get, commit, counted, signal } = await setup();
    await commit(5);
    const streams = Array.from({ length: 100 }, () => stream('/v1/changes/stream?after=5'));
    const polls = Array.from({ length: 100 }, () => get('/v1/changes?after=5&wait=60'));
    await until(() => signal.waiting === 200, 'every reader waiting');
    counted.reads = 0;
    await commit(1);
    const answers = await Promise.all(polls);
    for (const a of answers)
      expect(((await a.json()) as { items: Array<{ seq: number }> }).items).toEqual([
        expect.objectContaining({ seq: 6 }),
      ]);
    for (const s of streams) await s.until((e) => seqs(e).includes(6), 'the change');
    expect(counted.reads).toBe(1);
    for (const s of streams) s.close();
  });
});

describe('an event stream on the wire', () => {
  it('is the events alone after the headers, ended by the connection (no chunk framing per write)', async () => {
    const { port, commit, signal } = await setup();
    await commit(2);
    const socket = net.connect(port, '127.0.0.1');
    sockets.push(socket);
    let text = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      text += d;
    });
    socket.write(
      `GET /v1/changes/stream?after=0 HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${TOKEN}\r\n\r\n`,
    );
    await until(() => signal.waiting === 1 && text.includes('id: 2\n'), 'the first page and the wait');
    await commit(1);
    await until(() => text.includes('id: 3\n'), 'the third event');
    await until(() => text.endsWith('\n\n'), 'the whole third event');
    const [head, body] = text.split('\r\n\r\n') as [string, string];
    expect(head.toLowerCase()).not.toContain('transfer-encoding');
    expect(head.toLowerCase()).toContain('connection: close');
    // Exactly three events, back to back: no chunk sizes between the writes.
    expect([...body.matchAll(/id: (\d+)\ndata: \{[^\n]*\}\n\n/g)].map((m) => m[0]).join('')).toBe(body);
    expect(seqs(body.split('\n\n').map((e) => ({ id: /^id: (\d+)/.exec(e)?.[1] })))).toEqual([1, 2, 3]);
  });
});
