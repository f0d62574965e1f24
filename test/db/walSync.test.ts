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
