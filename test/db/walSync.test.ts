import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { changeSignalFor, recordChanges } from '../../src/sqlite/changes.js';
import { CommitQueue } from '../../src/sqlite/commitQueue.js';
import { type OpenDatabase, openDatabase } from '../../src/sqlite/open.js';
import { WalSync } from '../../src/sqlite/walSync.js';
import { tempDir } from '../helpers/context.js';

/**
 * The group commit's fsync runs off the loop: the group commits with `synchronous = NORMAL` and its
 * callers are answered after the WAL file's fsync. These pin the parts that could silently break:
 * which connections get it, that the connection is FULL again for every other writer, that every
 * caller is answered in order, and that a failed sync answers no caller with success.
 */
describe('WalSync and the group commit', () => {
  let dir: { dir: string; cleanup: () => void };
  let db: OpenDatabase | undefined;
  afterEach(() => {
    db?.close();
    dir?.cleanup();
  });
  const open = (synchronous: 'full' | 'normal') => {
    dir = tempDir();
    db = openDatabase(path.join(dir.dir, 'w.db'), { synchronous, migrate: false });
    db.sqlite.exec('CREATE TABLE t (n INTEGER)');
    return db.sqlite;
  };

  it('is used only where commits would sync themselves (FULL, WAL, a file)', () => {
    expect(WalSync.for(open('full'))).not.toBeNull();
    db?.close();
    dir.cleanup();
    expect(WalSync.for(open('normal'))).toBeNull();
  });

  it('commits the group with NORMAL, leaves the connection FULL, answers every caller in order', async () => {
    const sqlite = open('full');
    const queue = new CommitQueue(sqlite);
    const insert = sqlite.prepare('INSERT INTO t (n) VALUES (?)');
    const modeSeen: number[] = [];
    const answered: number[] = [];
    const all = Array.from({ length: 300 }, (_, n) =>
      queue
        .submit(() => {
          modeSeen.push(sqlite.pragma('synchronous', { simple: true }) as number);
          insert.run(n);
          return n;
        })
        .then((value) => answered.push(value)),
    );
    await Promise.all(all);
    expect(answered).toEqual(Array.from({ length: 300 }, (_, n) => n));
    expect(new Set(modeSeen)).toEqual(new Set([1])); // NORMAL inside the group
    expect(sqlite.pragma('synchronous', { simple: true })).toBe(2); // FULL for everyone else
    expect(sqlite.prepare('SELECT count(*) AS c FROM t').get()).toEqual({ c: 300 });
  });

  it('refuses the callers of a group whose fsync failed, and later groups still commit', async () => {
    const sqlite = open('full');
    const queue = new CommitQueue(sqlite);
    const insert = sqlite.prepare('INSERT INTO t (n) VALUES (?)');
    await queue.submit(() => insert.run(1));
    // Break the descriptor the sync uses: the next fsync fails with EBADF.
    const sync = (queue as unknown as { walSync: { fd: number | null } }).walSync;
    expect(sync.fd).not.toBeNull();
    const good = sync.fd;
    sync.fd = 987_654;
    await expect(queue.submit(() => insert.run(2))).rejects.toThrow(/EBADF|bad file/i);
    sync.fd = good;
    await expect(queue.submit(() => insert.run(3))).resolves.toBeDefined();
  });

  it("starts a group's fsync at once while another runs (two at most), and answers each caller by the first fsync begun after it", async () => {
    const sync = new WalSync('/nonexistent-wal');
    // The fsyncs in flight, each ended by the test (the real one is the kernel's).
    const running: Array<{ end: (err?: Error) => void }> = [];
    (sync as unknown as { fsyncOnce: () => Promise<void> }).fsyncOnce = () =>
      new Promise<void>((resolve, reject) => running.push({ end: (err) => (err ? reject(err) : resolve()) }));
    const heard: string[] = [];
    const call = (name: string) =>
      sync.sync().then(
        () => heard.push(`${name} ok`),
        (err: Error) => heard.push(`${name} ${err.message}`),
      );
    const flush = () => new Promise((r) => setImmediate(r));

    const first = call('g1');
    const second = call('g2');
    // g2 committed while g1's fsync runs: its own starts now, not after g1's ends.
    expect(running).toHaveLength(2);
    const third = call('g3');
    expect(running).toHaveLength(2);
    // g2's fsync ends first: it began after g1 and g2 committed, so both are durable, in their order.
    running[1]!.end();
    await Promise.all([first, second]);
    expect(heard).toEqual(['g1 ok', 'g2 ok']);
    // Room again: g3's fsync starts; it fails, and g3 alone hears of it.
    await flush();
    expect(running).toHaveLength(3);
    running[2]!.end(new Error('EIO'));
    await third;
    expect(heard).toEqual(['g1 ok', 'g2 ok', 'g3 EIO']);
    // g1's own fsync ending later answers nobody twice.
    running[0]!.end();
    await flush();
    expect(heard).toHaveLength(3);
    expect(running).toHaveLength(3);
  });

  it('wakes feed readers only once the group is durable, after its writer is answered', async () => {
    dir = tempDir();
    db = openDatabase(path.join(dir.dir, 'f.db'), { synchronous: 'full' });
    const sqlite = db.sqlite;
    const queue = new CommitQueue(sqlite);
    const signal = changeSignalFor(sqlite);
    const order: string[] = [];
    const woken = signal
      .whenChanged(signal.version, new AbortController().signal)
      .then(() => order.push('reader woken'));
    const written = queue
      .submit(() =>
        recordChanges(sqlite, [{ resource: 'operations', recordId: 'r1', kind: 'queued', at: 'now' }]),
      )
      .then(() => order.push('writer answered'));
    await Promise.all([woken, written]);
    expect(order).toEqual(['writer answered', 'reader woken']);
  });
});
