import { describe, expect, it } from 'vitest';
import { ChangeSignal } from '../../src/db/changeSignal.js';
import type { FeedReads } from '../../src/feed/feedReads.js';
import { type FeedEntry, type FeedQuery, toChange } from '../../src/feed/feedReads.js';
import { sharedFeedReads } from '../../src/feed/pageCache.js';

/**
 * The feed's shared pages over a store answering promises, as PostgreSQL's does: what is shared,
 * for how long, and what is not (a failed read).
 */

const AT = '2026-01-01T00:00:00.000Z';

/** A store holding `head` entries, answering after the test says so, counting its reads. */
function promisedStore() {
  const signal = new ChangeSignal();
  const state = { head: 0, reads: 0, fail: false };
  const entries = (q: FeedQuery): FeedEntry[] => {
    const rows: FeedEntry[] = [];
    for (let seq = q.after + 1; seq <= state.head && rows.length < q.limit; seq++)
      rows.push(toChange({ seq, resource: 'projects', record_id: `r-${seq}`, kind: 'insert', at: AT }));
    return rows;
  };
  const inner: FeedReads = {
    signal,
    head: () => Promise.resolve(state.head),
    read(q) {
      state.reads++;
      if (state.fail) return Promise.reject(new Error('connection lost'));
      return Promise.resolve(entries(q));
    },
  };
  return { signal, state, feed: sharedFeedReads(inner, 2) };
}

describe('sharedFeedReads', () => {
  it('readers asking the same question at one announcement share one read in flight', async () => {
    const { state, feed } = promisedStore();
    state.head = 3;
    const answers = await Promise.all(Array.from({ length: 50 }, () => feed.read({ after: 0, limit: 10 })));
    expect(state.reads).toBe(1);
    expect(new Set(answers).size).toBe(1);
    expect(answers[0]!.map((e) => e.seq)).toEqual([1, 2, 3]);
    // Another question is its own read.
    await feed.read({ after: 0, limit: 10, resource: 'projects' });
    expect(state.reads).toBe(2);
  });

  it('a short page is read afresh after the next announcement; a full one is kept', async () => {
    const { signal, state, feed } = promisedStore();
    state.head = 15;
    await feed.read({ after: 0, limit: 10 });
    await feed.read({ after: 10, limit: 10 });
    expect(state.reads).toBe(2);
    state.head = 16;
    signal.announce(16);
    expect((await feed.read({ after: 0, limit: 10 })).map((e) => e.seq)).toEqual(range(1, 10));
    expect(state.reads).toBe(2);
    expect((await feed.read({ after: 10, limit: 10 })).map((e) => e.seq)).toEqual(range(11, 16));
    expect(state.reads).toBe(3);
  });

  it('keeps only the most recently used full pages', async () => {
    const { state, feed } = promisedStore();
    state.head = 100;
    for (const after of [0, 10, 20]) await feed.read({ after, limit: 10 });
    expect(state.reads).toBe(3);
    await feed.read({ after: 20, limit: 10 });
    await feed.read({ after: 10, limit: 10 });
    expect(state.reads).toBe(3);
    // Two are kept: the first page was the least recently used.
    await feed.read({ after: 0, limit: 10 });
    expect(state.reads).toBe(4);
  });

  it('a failed read is not shared with later askers', async () => {
    const { state, feed } = promisedStore();
    state.head = 3;
    state.fail = true;
    await expect(feed.read({ after: 0, limit: 10 })).rejects.toThrow('connection lost');
    state.fail = false;
    expect((await feed.read({ after: 0, limit: 10 })).map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(state.reads).toBe(2);
  });

  it('the head is read once per announcement', async () => {
    const { signal, state, feed } = promisedStore();
    state.head = 4;
    expect(await Promise.all([feed.head(), feed.head()])).toEqual([4, 4]);
    state.head = 5;
    expect(await feed.head()).toBe(4);
    signal.announce(5);
    expect(await feed.head()).toBe(5);
  });
});

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}
