import { readdirSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { CommitQueue } from '../../src/sqlite/commitQueue.js';
import { DatabaseUnavailable, databaseFaultsFor } from '../../src/sqlite/faults.js';
import { type OpenDatabase, openDatabase } from '../../src/sqlite/open.js';
import { whenUnlocked } from '../../src/sqlite/whenUnlocked.js';
import { sql } from '../../src/store/sql.js';
import { tempDir } from '../helpers/context.js';
import { until } from '../ops/child.js';

/** A daemon-like connection (short lock wait) and a second connection, as another process would hold. */
function twoConnections() {
  const { dir, cleanup } = tempDir();
  const file = path.join(dir, 'q.db');
  const daemon = openDatabase(file, { busyTimeoutMs: 20 });
  daemon.sqlite.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, v BLOB)');
  const other = new Database(file);
  return {
    daemon,
    other,
    dispose: () => {
      other.close();
      daemon.close();
      cleanup();
    },
  };
}

const insert =
  (db: OpenDatabase, name: string, bytes = 0) =>
  () =>
    db.sqlite.prepare('INSERT INTO t (name, v) VALUES (?, ?)').run(name, Buffer.alloc(bytes, 7))
      .lastInsertRowid;
const names = (db: OpenDatabase) => db.sqlite.prepare('SELECT name FROM t ORDER BY id').pluck().all();

describe('group commit under database faults', () => {
  const disposers: Array<() => void> = [];
  afterEach(() => {
    for (const d of disposers.splice(0)) d();
  });
  const setup = () => {
    const c = twoConnections();
    disposers.push(c.dispose);
    return c;
  };

  it('another connection holding the write lock: background work waits and commits in order once it is released; a request is refused', async () => {
    const { daemon, other } = setup();
    const queue = new CommitQueue(daemon.sqlite);
    const faults = databaseFaultsFor(daemon.sqlite);
    other.exec('BEGIN IMMEDIATE');
    other.prepare("INSERT INTO t (name) VALUES ('other')").run();

    const first = queue.submit(insert(daemon, 'bg-1'));
    const second = queue.submit(insert(daemon, 'bg-2'));
    const request = queue.submit(insert(daemon, 'request'), { busyGraceMs: 0 });
    const refusal = await request.then(
      () => null,
      (err: unknown) => err,
    );
    expect(refusal).toBeInstanceOf(DatabaseUnavailable);
    expect((refusal as DatabaseUnavailable).kind).toBe('busy');
    expect((refusal as DatabaseUnavailable).retryAfterSeconds).toBe(1);
    expect(faults.facts().lockedSince).not.toBeNull();

    // Still held: the loop runs (this await returns) while the background tasks keep waiting.
    let settled = false;
    void Promise.allSettled([first, second]).then(() => {
      settled = true;
    });
    let tries = 0;
    const note = faults.noteFailure.bind(faults);
    faults.noteFailure = (err) => {
      tries++;
      return note(err);
    };
    await until('three more tries under the lock', () => tries >= 3);
    expect(settled).toBe(false);
    // A read is not held up by the lock (WAL).
    expect(names(daemon)).toEqual([]);

    other.exec('COMMIT');
    await Promise.all([first, second]);
    expect(names(daemon)).toEqual(['other', 'bg-1', 'bg-2']);
    expect(faults.facts().lockedSince).toBeNull();
  });

  it('whenUnlocked: a direct write waits out the lock without holding the loop, then runs once', async () => {
    const { daemon, other } = setup();
    other.exec('BEGIN IMMEDIATE');
    let tries = 0;
    const write = whenUnlocked(daemon.sqlite, () => {
      tries++;
      return insert(daemon, 'direct')();
    });
    await until('several tries', () => tries >= 3);
    other.exec('COMMIT');
    await write;
    expect(names(daemon)).toEqual(['direct']);
  });

  it('disk full: every task of a batch is either stored and resolved or refused and absent; reported until a write succeeds', async () => {
    const { daemon } = setup();
    const queue = new CommitQueue(daemon.sqlite);
    const faults = databaseFaultsFor(daemon.sqlite);
    const pages = daemon.sqlite.pragma('page_count', { simple: true }) as number;
    // SQLite's own size limit: the file cannot grow, as on a full disk.
    daemon.sqlite.pragma(`max_page_count = ${pages + 2}`);

    const tasks = Array.from({ length: 12 }, (_, i) => `row-${i}`);
    const outcomes = await Promise.allSettled(tasks.map((name) => queue.submit(insert(daemon, name, 3000))));
    const stored = new Set(names(daemon) as string[]);
    const refused = tasks.filter((_, i) => outcomes[i]!.status === 'rejected');
    expect(refused.length).toBeGreaterThan(0);
    tasks.forEach((name, i) => {
      expect(stored.has(name), name).toBe(outcomes[i]!.status === 'fulfilled');
    });
    const failure = faults.facts().writeFailure;
    expect(failure?.code).toBe('SQLITE_FULL');
    expect(failure?.message).toBe('database or disk is full');

    // A batch that only reads does not clear it: nothing was written.
    await queue.submit(() => daemon.sqlite.prepare('SELECT count(*) FROM t').pluck().get());
    expect(faults.facts().writeFailure).not.toBeNull();

    daemon.sqlite.pragma('max_page_count = 1000000');
    await Promise.all(refused.map((name) => queue.submit(insert(daemon, name, 3000))));
    expect(faults.facts().writeFailure).toBeNull();
    expect(new Set(names(daemon) as string[])).toEqual(new Set(tasks));
  });

  it('corruption found: every write is refused, through the queue or not', async () => {
    const { daemon } = setup();
    const queue = new CommitQueue(daemon.sqlite);
    databaseFaultsFor(daemon.sqlite).markCorrupt('Page 3: test', 'integrity-check');
    const err = await queue.submit(insert(daemon, 'x')).then(
      () => null,
      (e: unknown) => e,
    );
    expect((err as DatabaseUnavailable).kind).toBe('corrupt');
    expect(() => insert(daemon, 'y')()).toThrow(/readonly/);
    expect(names(daemon)).toEqual([]);
  });
});

describe('group commit: what waits for the fsync', () => {
  it('a task that need not be durable is answered at its commit, before the fsync its durable neighbours wait for', async () => {
    const { daemon, dispose } = twoConnections();
    try {
      daemon.sqlite.pragma('synchronous = FULL');
      const queue = new CommitQueue(daemon.sqlite);
      const order: string[] = [];
      const durable = queue.submit(insert(daemon, 'enqueue')).then(() => order.push('enqueue'));
      const early = queue.submit(insert(daemon, 'claim'), { durable: false }).then(() => order.push('claim'));
      await Promise.all([durable, early]);
      // One group, one commit: the claim heard of it first; the enqueue only after its fsync.
      expect(order).toEqual(['claim', 'enqueue']);
      expect(names(daemon)).toEqual(['enqueue', 'claim']);

      // Without an fsync to wait for (synchronous = NORMAL), every task is answered at the commit, in order.
      daemon.sqlite.pragma('synchronous = NORMAL');
      const plain = new CommitQueue(daemon.sqlite);
      const again: string[] = [];
      await Promise.all([
        plain.submit(insert(daemon, 'a')).then(() => again.push('a')),
        plain.submit(insert(daemon, 'b'), { durable: false }).then(() => again.push('b')),
      ]);
      expect(again).toEqual(['a', 'b']);
    } finally {
      dispose();
    }
  });
});

describe('group commit: reads', () => {
  it('a read sees what was committed when it was called, and its caller goes on only after the loop has turned', async () => {
    const { daemon, dispose } = twoConnections();
    try {
      const queue = new CommitQueue(daemon.sqlite);
      await queue.submit(insert(daemon, 'before'));
      const events: string[] = [];
      // A caller reading again and again (the reconciler's round): what the loop queued meanwhile
      // (an HTTP request's callback, here a timer-less immediate) runs between its reads.
      const reader = (async () => {
        for (let i = 0; i < 3; i++) {
          const rows = await queue.read<{ name: string }>(sql`SELECT name FROM t ORDER BY id`);
          events.push(`read ${rows.map((r) => r.name).join(',')}`);
        }
      })();
      setImmediate(() => {
        events.push('other work');
        // Committed after the second read was taken (it ran as the first was answered): the third sees it.
        daemon.sqlite.prepare("INSERT INTO t (name) VALUES ('after')").run();
      });
      await reader;
      expect(events).toEqual(['read before', 'other work', 'read before', 'read before,after']);
    } finally {
      dispose();
    }
  });
});

describe('group commit: what it reports of its waits', () => {
  it('a group that found the lock held reports one lock wait once it commits, and every durable group its fsync', async () => {
    const { daemon, other, dispose } = twoConnections();
    try {
      daemon.sqlite.pragma('synchronous = FULL');
      const queue = new CommitQueue(daemon.sqlite);
      const waits: Array<[string, number]> = [];
      queue.onWait = (phase, seconds) => waits.push([phase, seconds]);
      other.exec('BEGIN IMMEDIATE');
      const faults = databaseFaultsFor(daemon.sqlite);
      let tries = 0;
      const note = faults.noteFailure.bind(faults);
      faults.noteFailure = (err) => {
        tries++;
        return note(err);
      };
      const first = queue.submit(insert(daemon, 'waited'));
      await until('two tries under the lock', () => tries >= 2);
      expect(waits).toEqual([]);
      other.exec('COMMIT');
      await first;
      await until('the fsync reported', () => waits.length >= 2);
      expect(waits.map(([phase]) => phase)).toEqual(['lock', 'fsync']);
      expect(waits[0]![1]).toBeGreaterThan(0);

      // The lock free: the next group reports its fsync only.
      await queue.submit(insert(daemon, 'free'));
      await until('the second fsync reported', () => waits.length >= 3);
      expect(waits.map(([phase]) => phase)).toEqual(['lock', 'fsync', 'fsync']);
    } finally {
      dispose();
    }
  });
});

/** The deleted files this process holds open: SQLite's temporary files are unlinked as they are opened. */
function deletedFilesOpen(): string[] {
  return readdirSync('/proc/self/fd').flatMap((fd) => {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      return target.endsWith(' (deleted)') ? [target] : [];
    } catch {
      return []; // closed meanwhile (the readdir's own descriptor)
    }
  });
}

describe('group commit: savepoints', () => {
  it("a task's savepoint keeps the pages it changed in memory, not in a file outside the database; outside a group temporary storage is the default again", async () => {
    const { daemon, dispose } = twoConnections();
    try {
      const add = daemon.sqlite.prepare('INSERT INTO t (name, v) VALUES (?, ?)');
      daemon.sqlite.transaction(() => {
        for (let i = 0; i < 2_000; i++) add.run(`row-${i}`, Buffer.alloc(200, 1));
      })();
      const queue = new CommitQueue(daemon.sqlite);
      const before = deletedFilesOpen();
      let during: string[] = [];
      // Every seventh row of 2,000: ~100 pages of 4 KiB changed in the task's savepoint, past the
      // 64 KiB SQLite keeps of a sub-journal in memory before it writes one to a temporary file.
      const changed = await queue.submit(() => {
        const { changes } = daemon.sqlite.prepare("UPDATE t SET name = 'x' || name WHERE id % 7 = 0").run();
        during = deletedFilesOpen();
        return changes;
      });
      expect(changed).toBe(285);
      expect(during.filter((file) => !before.includes(file))).toEqual([]);
      // A read's temporary b-trees (a large sort, a GROUP BY) still go to disk, not to memory.
      expect(daemon.sqlite.pragma('temp_store', { simple: true })).toBe(0);
      expect(daemon.sqlite.prepare("SELECT count(*) FROM t WHERE name LIKE 'x%'").pluck().get()).toBe(285);
    } finally {
      dispose();
    }
  });
});
