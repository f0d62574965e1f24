import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { changeSignalFor, durability, recordChanges } from '../../src/sqlite/changes.js';
import { CommitQueue } from '../../src/sqlite/commitQueue.js';
import { type OpenDatabase, openDatabase } from '../../src/sqlite/open.js';
import { EARLY_SYNC_WITHIN_MS, WalSync } from '../../src/sqlite/walSync.js';
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
    vi.useRealTimers();
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

  /** A WalSync whose fsyncs the test ends (the real one is the kernel's), and what each call heard. */
  const heldSync = () => {
    const sync = new WalSync('/nonexistent-wal');
    const running: Array<{ end: (err?: Error) => void }> = [];
    (sync as unknown as { fsyncOnce: () => Promise<void> }).fsyncOnce = () =>
      new Promise<void>((resolve, reject) => running.push({ end: (err) => (err ? reject(err) : resolve()) }));
    const heard: string[] = [];
    const call = (name: string, how: 'sync' | 'syncSoon') =>
      sync[how]().then(
        () => heard.push(`${name} ok`),
        (err: Error) => heard.push(`${name} ${err.message}`),
      );
    return { running, heard, call };
  };

  it('starts the fsync of commits nobody waits on once the early window ends, one for all of them', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { running, heard, call } = heldSync();
    const calls = [call('e1', 'syncSoon'), call('e2', 'syncSoon')];
    vi.advanceTimersByTime(EARLY_SYNC_WITHIN_MS - 1);
    calls.push(call('e3', 'syncSoon'));
    expect(running).toHaveLength(0);
    vi.advanceTimersByTime(1);
    // The window is the first early commit's: e3, a millisecond old, goes in the same fsync.
    expect(running).toHaveLength(1);
    running[0]!.end();
    await Promise.all(calls);
    expect(heard).toEqual(['e1 ok', 'e2 ok', 'e3 ok']);
    vi.advanceTimersByTime(10 * EARLY_SYNC_WITHIN_MS);
    expect(running).toHaveLength(1);
  });

  it("starts an awaited commit's fsync at once, covering the early ones before it", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { running, heard, call } = heldSync();
    const early = call('e1', 'syncSoon');
    expect(running).toHaveLength(0);
    const awaited = call('d1', 'sync');
    expect(running).toHaveLength(1);
    running[0]!.end();
    await Promise.all([early, awaited]);
    expect(heard).toEqual(['e1 ok', 'd1 ok']);
    // The early window's timer went with it: no second fsync for what the first covered.
    vi.advanceTimersByTime(10 * EARLY_SYNC_WITHIN_MS);
    expect(running).toHaveLength(1);
  });

  it('gives an early window that ended while two fsyncs ran the next room in flight, at once', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { running, heard, call } = heldSync();
    const awaited = [call('d1', 'sync'), call('d2', 'sync')];
    const early = call('e1', 'syncSoon');
    vi.advanceTimersByTime(EARLY_SYNC_WITHIN_MS);
    expect(running).toHaveLength(2);
    running[0]!.end();
    await awaited[0];
    // No second window: the room d1's fsync left is e1's now.
    expect(running).toHaveLength(3);
    running[1]!.end();
    running[2]!.end(new Error('EIO'));
    await Promise.all([...awaited, early]);
    expect(heard).toEqual(['d1 ok', 'd2 ok', 'e1 EIO']);
  });

  it('answers the early tasks of a group at COMMIT and fsyncs them with the next awaited group', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const sqlite = open('full');
    const queue = new CommitQueue(sqlite);
    const walSync = (queue as unknown as { walSync: WalSync }).walSync;
    const real = (walSync as unknown as { fsyncOnce: () => Promise<void> }).fsyncOnce.bind(walSync);
    let fsyncs = 0;
    (walSync as unknown as { fsyncOnce: () => Promise<void> }).fsyncOnce = () => {
      fsyncs++;
      return real();
    };
    const insert = sqlite.prepare('INSERT INTO t (n) VALUES (?)');
    await queue.submit(() => insert.run(1), { durable: false });
    await queue.submit(() => insert.run(2), { durable: false });
    expect(fsyncs).toBe(0);
    await queue.submit(() => insert.run(3));
    expect(fsyncs).toBe(1);
    await queue.submit(() => insert.run(4), { durable: false });
    expect(fsyncs).toBe(1);
    const durable = durability(sqlite).pending;
    vi.advanceTimersByTime(EARLY_SYNC_WITHIN_MS);
    expect(fsyncs).toBe(2);
    await durable;
    expect(sqlite.prepare('SELECT count(*) AS c FROM t').get()).toEqual({ c: 4 });
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
