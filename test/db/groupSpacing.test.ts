import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CommitQueue } from '../../src/sqlite/commitQueue.js';
import { DISPATCHER_GROUP_SPACING_MS, DISPATCHER_WORK } from '../../src/sqlite/dispatcherBatches.js';
import { type OpenDatabase, openDatabase } from '../../src/sqlite/open.js';
import { tempDir } from '../helpers/context.js';

/**
 * Spaced groups (TransactionOptions.groupSpacingMs): while only work that may wait is queued (the
 * dispatcher's claims and settles), its groups start at most every few milliseconds, so each commits
 * a few milliseconds' worth; after a quiet spell the first does not wait, and any other write starts
 * the group at once. Timers and the clock are faked; the group itself runs on a real SQLite file.
 */

const SPACED = { durable: false, groupSpacingMs: 4 };

let db: OpenDatabase | undefined;
let cleanup: (() => void) | undefined;
afterEach(() => {
  vi.useRealTimers();
  db?.close();
  cleanup?.();
  db = undefined;
});

function queue(): { queue: CommitQueue; insert: (name: string) => () => unknown; groups: () => number[] } {
  const dir = tempDir();
  cleanup = dir.cleanup;
  db = openDatabase(path.join(dir.dir, 'spacing.db'), { synchronous: 'normal' });
  const { sqlite } = db;
  sqlite.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tx INTEGER NOT NULL)');
  // Which group wrote a row: the rows of one transaction see the same count of rows before it.
  sqlite.exec('CREATE TABLE tx (n INTEGER NOT NULL)');
  sqlite.exec('INSERT INTO tx VALUES (0)');
  let open = false;
  const insert = (name: string) => () => {
    if (!open) {
      sqlite.exec('UPDATE tx SET n = n + 1');
      open = true;
      queueMicrotask(() => {
        open = false;
      });
    }
    return sqlite.prepare('INSERT INTO t (name, tx) VALUES (?, (SELECT n FROM tx))').run(name).changes;
  };
  const groups = () => sqlite.prepare('SELECT tx FROM t ORDER BY id').pluck().all() as number[];
  return { queue: new CommitQueue(sqlite), insert, groups };
}

/** Lets the real setImmediate and the promise callbacks after it run. */
const turns = async (n = 3) => {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

describe('spaced groups', () => {
  it('after a quiet spell the first group starts at once; spaced work within the spacing waits for it, as one group', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const { queue: q, insert, groups } = queue();
    await q.submit(insert('a'), SPACED);
    const done: string[] = [];
    for (const name of ['b', 'c']) void q.submit(insert(name), SPACED).then(() => done.push(name));
    await turns();
    expect(done).toEqual([]);
    vi.advanceTimersByTime(3);
    await turns();
    expect(done).toEqual([]);
    vi.advanceTimersByTime(1);
    await turns();
    expect(done).toEqual(['b', 'c']);
    expect(groups()).toEqual([1, 2, 2]);
  });

  it('any other write starts the group at once, and the spaced work waiting joins it', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const { queue: q, insert, groups } = queue();
    await q.submit(insert('a'), SPACED);
    const spaced = q.submit(insert('b'), SPACED);
    await turns();
    await Promise.all([spaced, q.submit(insert('enqueue'))]);
    expect(groups()).toEqual([1, 2, 2]);
  });

  it('spaced work submitted a spacing after the last spaced group does not wait', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const { queue: q, insert, groups } = queue();
    await q.submit(insert('a'), SPACED);
    vi.advanceTimersByTime(4);
    await q.submit(insert('b'), SPACED);
    expect(groups()).toEqual([1, 2]);
  });

  it("is what the dispatcher's claims and settles ask for", () => {
    expect(DISPATCHER_WORK).toEqual({ durable: false, groupSpacingMs: DISPATCHER_GROUP_SPACING_MS });
    expect(DISPATCHER_GROUP_SPACING_MS).toBeGreaterThan(0);
  });
});
