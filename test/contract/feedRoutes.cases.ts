import { afterEach, describe, expect, it } from 'vitest';
import type { Component } from '../../src/context.js';
import type { ChangeRow } from '../../src/store/script.js';
import { ManualTimers, openStream, startFeedApi } from '../feed/helpers.js';
import { apiCaller } from '../helpers/http.js';
import type { FeedStore, FeedStoreFactory } from './feedStores.js';

/**
 * The feed's routes, the same cases on SQLite (feedRoutes.sqlite.test.ts) and PostgreSQL
 * (feedRoutes.pg.test.ts), through a real HTTP listener: `/v1/changes` long-polls woken by a commit
 * (on PostgreSQL one made on another pool, heard through LISTEN/NOTIFY), a wait that ends empty, a
 * resource filter that leaves a wake unanswered, `/v1/changes/stream` from Last-Event-ID and live,
 * and the 400s. Seqs are read relative to the head at the start of each case (PostgreSQL's database
 * is shared by the file's cases).
 */

const TOKEN = 'feed-test-token-0123456789';
const AT = '2026-01-01T00:00:00.000Z';

/** Yields to the event loop until `check` holds (bounded), instead of sleeping for time to pass. */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200_000 && !check(); i++) await new Promise((r) => setImmediate(r));
  if (!check()) throw new Error(`never: ${what}`);
}

const rows = (n: number, resource = 'projects', kind = 'update'): ChangeRow[] =>
  Array.from({ length: n }, (_, i) => ({ resource, recordId: `${resource}-${i}`, kind, at: AT }));

/** Registers the cases on the store `name`; `open` gives each case its store. */
export function feedRoutesCases(name: string, open: FeedStoreFactory): void {
  describe(`the change feed routes on ${name}`, () => {
    let store: FeedStore | undefined;
    let api: Component | undefined;

    afterEach(async () => {
      await api?.stop();
      await store?.close();
      api = undefined;
      store = undefined;
    });

    async function setup() {
      store = await open({ 'api.listen': '127.0.0.1:0', 'api.token': TOKEN });
      const timers = new ManualTimers();
      const started = await startFeedApi(store.ctx, timers, 15_000, store.feed);
      api = started.api;
      const s = store;
      return {
        store: s,
        timers,
        base: started.base,
        call: apiCaller(started.base, TOKEN),
        start: await s.head(),
        signal: s.feed.signal,
        stream: (path: string, headers?: Record<string, string>) =>
          openStream(started.base, path, TOKEN, headers),
      };
    }

    const seqs = (events: Array<{ id?: string }>) => events.filter((e) => e.id).map((e) => Number(e.id));
    const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

    it('a waiting long-poll is answered by the next commit with that change, its last and the head', async () => {
      const { call, store, signal, start, timers } = await setup();
      const poll = call('GET', `/v1/changes?after=${start}&wait=60`);
      await until(() => signal.waiting === 1, 'the poll waits');
      expect(timers.armed).toBe(1);
      const seq = await store.commit([{ resource: 'operations', recordId: 'ref-1', kind: 'queued', at: AT }]);
      expect(seq).toBe(start + 1);
      expect((await poll).json).toEqual({
        // The camelCase name and its deprecated snake_case alias, the same value (docs/api.md "Field names").
        items: [
          { seq, resource: 'operations', recordId: 'ref-1', record_id: 'ref-1', kind: 'queued', at: AT },
        ],
        last: seq,
        head: seq,
      });
      await until(() => signal.waiting === 0 && timers.armed === 0, 'no waiter or timer left');
    });

    it('a page already there is answered at once; a wait that ends with nothing new is an empty page', async () => {
      const { call, store, signal, start, timers } = await setup();
      await store.commit(rows(3));
      const now = await call('GET', `/v1/changes?after=${start}&limit=2&wait=60`);
      expect(now.json).toMatchObject({ last: start + 2, head: start + 3 });
      expect(now.json.items.map((e: { seq: number }) => e.seq)).toEqual([start + 1, start + 2]);
      // Each change under recordId and its deprecated alias record_id, the same value.
      expect(
        now.json.items.map((e: { recordId: string; record_id: string }) => [e.recordId, e.record_id]),
      ).toEqual([
        ['projects-0', 'projects-0'],
        ['projects-1', 'projects-1'],
      ]);
      expect(timers.armed).toBe(0);
      const poll = call('GET', `/v1/changes?after=${start + 3}&wait=5`);
      await until(() => signal.waiting === 1, 'the poll waits');
      timers.fire(5_000);
      expect((await poll).json).toEqual({ items: [], last: start + 3, head: start + 3 });
    });

    it('a change of another resource wakes a filtered wait without answering it; the next of its own does', async () => {
      const { call, store, signal, start } = await setup();
      const poll = call('GET', `/v1/changes?after=${start}&resource=operations&wait=60`);
      await until(() => signal.waiting === 1, 'the poll waits');
      const version = signal.version;
      await store.commit(rows(1, 'projects'));
      // Woken, read nothing of its own, waiting again.
      await until(() => signal.version > version && signal.waiting === 1, 'the poll waits again');
      const seq = await store.commit(rows(1, 'operations', 'approved'));
      expect((await poll).json).toMatchObject({
        items: [{ seq, resource: 'operations', kind: 'approved' }],
        last: seq,
        head: seq,
      });
    });

    it('an event stream resumes from Last-Event-ID (over `after`), then sends each change as it commits', async () => {
      const { stream, store, start } = await setup();
      await store.commit(rows(20));
      const s = stream(`/v1/changes/stream?after=${start + 2}`, { 'last-event-id': String(start + 15) });
      await s.until((e) => seqs(e).length === 5, 'the backlog');
      expect(seqs(s.events)).toEqual(range(start + 16, start + 20));
      await store.commit(rows(2, 'operations', 'queued'));
      await s.until((e) => seqs(e).length === 7, 'the live changes');
      expect(seqs(s.events)).toEqual(range(start + 16, start + 22));
      expect(JSON.parse(s.events.at(-1)!.data!)).toEqual({
        seq: start + 22,
        resource: 'operations',
        recordId: 'operations-1',
        record_id: 'operations-1',
        kind: 'queued',
        at: AT,
      });
      s.close();
    });

    it('an event stream filters by resource', async () => {
      const { stream, store, start } = await setup();
      await store.commit(rows(2, 'projects'));
      await store.commit(rows(2, 'operations'));
      const s = stream(`/v1/changes/stream?after=${start}&resource=operations`);
      await s.until((e) => seqs(e).length === 2, 'the operations');
      expect(seqs(s.events)).toEqual([start + 3, start + 4]);
      s.close();
    });

    it('a bad after, wait or Last-Event-ID is a 400 naming it', async () => {
      const { call, base } = await setup();
      for (const [path, field] of [
        ['/v1/changes?after=-1', 'after'],
        ['/v1/changes?wait=61', 'wait'],
        ['/v1/changes?after=1.5', 'after'],
        ['/v1/changes?since=3', ''],
        ['/v1/changes/stream?after=x', 'after'],
      ] as const) {
        const answer = await call('GET', path);
        expect(answer.status, path).toBe(400);
        if (field) expect(answer.json.error, path).toMatch(new RegExp(`^${field}: `));
      }
      const bad = await fetch(`${base}/v1/changes/stream`, {
        headers: { authorization: `Bearer ${TOKEN}`, 'last-event-id': 'abc' },
      });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: string }).error).toMatch(/^Last-Event-ID: /);
    });
  });
}
