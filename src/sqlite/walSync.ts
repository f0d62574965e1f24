import { closeSync, fsync, openSync } from 'node:fs';
import { durability } from './changes.js';
import type { Sqlite } from './open.js';
import { perHandle } from './perHandle.js';
import { setPragma } from './setPragma.js';

/**
 * Most fsyncs of one WAL in flight at once. A group that committed while one was running used to
 * wait for it to end and then for its own: up to two fsyncs. One started at once ends about when a
 * lone fsync would (the kernel batches them into one journal commit where it can): measured on the
 * project's 2-core machine, 500 syncs a second, p50 7.9-12.4 ms chained against 4.2-4.4 ms with two
 * in flight. Two, so that libuv's thread pool (4 threads, shared by every thread of the process)
 * keeps room for other work.
 */
export const MAX_FSYNCS_IN_FLIGHT = 2;

/**
 * Longest a commit that no caller waits on ({@link WalSync.syncSoon}: the dispatcher's claims and
 * settles) goes before an fsync covering it starts, ms. Started at once, the dispatcher's groups
 * took an fsync each: 2,420 for a drain of 10,000 operations (`npm run bench -- --only outbox`),
 * each a thread-pool round trip for the loop and a flush for the disk; within 3 ms, about 600.
 * What waits meanwhile: feed readers' wake-up for those rows (./changes.ts), and a power loss in
 * that window sends those rows again (at-least-once, as after any crash).
 */
export const EARLY_SYNC_WITHIN_MS = 3;

interface SyncWaiter {
  /** The sync() call's ticket: an fsync started after it (covering tickets up to its own) answers it. */
  ticket: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * The group commit's fsync, off the event loop. With `synchronous = FULL` SQLite fsyncs the WAL
 * inside COMMIT, on the thread that commits: profiles of the daemon showed the loop blocked there
 * 38 % of the time under webhooks and 41 % while draining the outbox (the same runs with
 * `synchronous = NORMAL`, no fsync, took webhooks from 0.55x to 0.96x of a bare handler).
 *
 * So a group commit runs with `synchronous = NORMAL` (SQLite writes the WAL frames, does not sync
 * them), and its callers are answered only after `fsync` of the WAL file has run in libuv's thread
 * pool. Meanwhile the loop goes on parsing, verifying and committing the next group, whose own
 * fsync starts at once (up to {@link MAX_FSYNCS_IN_FLIGHT}). A 201 or a webhook 2xx still means the
 * row is on disk. What others may see sooner: a committed row is visible to readers a moment
 * before it is durable (only a power loss in that moment takes it back, together with everything
 * after it: the WAL loses a suffix, never a hole). A group whose callers were answered at COMMIT
 * (the dispatcher's) does not start an fsync of its own at once: {@link WalSync.syncSoon}.
 *
 * Checkpoints are unchanged: under NORMAL SQLite still syncs the WAL before copying it into the
 * database file and syncs the file after. Linux syncs the inode whatever descriptor asks, so a
 * read-only descriptor of the WAL file is enough. The WAL file stays the same file while a
 * connection is open (it is truncated, never replaced).
 */
export class WalSync {
  private fd: number | null = null;
  /** Tickets handed out: one per sync() or syncSoon() call. */
  private calls = 0;
  /** The highest ticket an fsync already started covers. */
  private started = 0;
  /**
   * The highest ticket whose fsync may not wait: a {@link sync} call's, or a {@link syncSoon} call's
   * once the early window has ended. While one is not covered, the next room in flight is its.
   */
  private urgent = 0;
  private inFlight = 0;
  /** Callers not answered yet, in ticket order. */
  private waiters: SyncWaiter[] = [];
  /** The timer of the early window, while one runs: {@link syncSoon} tickets wait for its end. */
  private soon: NodeJS.Timeout | null = null;

  constructor(private readonly walPath: string) {}

  /**
   * The off-loop sync for this connection, or null when its commits need none (`synchronous` below
   * FULL) or must sync themselves (not a WAL file).
   */
  static for(sqlite: Sqlite): WalSync | null {
    if (sqlite.memory || sqlite.readonly) return null;
    // 2 is FULL: NORMAL (1) and OFF (0) promise no fsync per commit, so there is none to move.
    if (sqlite.pragma('synchronous', { simple: true }) !== 2) return null;
    const mode = String(sqlite.pragma('journal_mode', { simple: true })).toLowerCase();
    if (mode !== 'wal') return null;
    return sharedSync(sqlite);
  }

  /**
   * Resolves once everything this connection committed before the call is on disk: when an fsync
   * started after the call has ended, the first such to end (an fsync covers every write before it
   * began). Callers are answered in the order they called.
   */
  sync(): Promise<void> {
    const answered = this.ticket();
    this.urgent = this.calls;
    this.startFsyncs();
    return answered;
  }

  /**
   * {@link sync} for a commit whose callers were answered at COMMIT (TransactionOptions.durable
   * false): its fsync starts within {@link EARLY_SYNC_WITHIN_MS}, or sooner with a {@link sync}
   * call's, which covers it. The descriptor is opened now, while the file surely exists: a
   * connection closed meanwhile takes the WAL file away, and an fsync of the open descriptor still
   * reaches its inode.
   */
  syncSoon(): Promise<void> {
    const answered = this.ticket();
    try {
      this.descriptor();
    } catch {
      // The fsync's own open fails the same way, and its callers hear of it there.
    }
    this.startFsyncs();
    return answered;
  }

  /** A new caller's ticket: the promise the first fsync started after it answers. */
  private ticket(): Promise<void> {
    const ticket = ++this.calls;
    return new Promise<void>((resolve, reject) => this.waiters.push({ ticket, resolve, reject }));
  }

  /**
   * Starts an fsync for the callers no running one covers, while there is room in flight: at once
   * when a {@link sync} caller is among them, else once the early window has ended.
   */
  private startFsyncs(): void {
    if (this.started >= this.calls) return;
    if (this.urgent <= this.started) {
      this.soon ??= setTimeout(() => {
        this.soon = null;
        this.urgent = this.calls;
        this.startFsyncs();
      }, EARLY_SYNC_WITHIN_MS);
      return;
    }
    while (this.inFlight < MAX_FSYNCS_IN_FLIGHT && this.started < this.calls) {
      if (this.soon !== null) clearTimeout(this.soon);
      this.soon = null;
      const upTo = this.calls;
      this.started = upTo;
      this.inFlight++;
      this.fsyncOnce().then(
        () => this.answer(upTo, null),
        (err: unknown) => this.answer(upTo, { err }),
      );
    }
  }

  /** An fsync covering tickets up to `upTo` ended: its callers not yet answered hear how. */
  private answer(upTo: number, failed: { err: unknown } | null): void {
    this.inFlight--;
    let covered = 0;
    while (covered < this.waiters.length && this.waiters[covered]!.ticket <= upTo) covered++;
    for (const waiter of this.waiters.splice(0, covered)) {
      if (failed) waiter.reject(failed.err);
      else waiter.resolve();
    }
    this.startFsyncs();
  }

  private fsyncOnce(): Promise<void> {
    return new Promise((resolve, reject) => {
      let fd: number;
      try {
        fd = this.descriptor();
      } catch (err) {
        reject(err);
        return;
      }
      fsync(fd, (err) => (err ? reject(err) : resolve()));
    });
  }

  /** A read-only descriptor of the WAL file, opened once. */
  private descriptor(): number {
    this.fd ??= openSync(this.walPath, 'r');
    return this.fd;
  }

  /** Lets the descriptor go (the connection is closing). */
  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}

/** One per handle (one descriptor of its WAL), shared by every writer on it. */
const sharedSync = perHandle((sqlite: Sqlite) => new WalSync(`${sqlite.name}-wal`));

/**
 * Runs one synchronous transaction of `sqlite` with its fsync moved out of the write lock: COMMIT
 * under `synchronous = NORMAL`, then the WAL's fsync, awaited. For a bulk writer in a worker thread
 * (the mirror's pages): under FULL its COMMIT held the lock through the fsync, and an API enqueue
 * that arrived meanwhile waited that long behind it. Resolves with the transaction's result once it
 * is on disk, so a checkpoint committed with its page is durable before the next page is written;
 * without an off-lock sync (`walSync` null: not WAL, or `synchronous` below FULL) it is the plain
 * transaction.
 */
export async function commitThenSync<T>(
  sqlite: Sqlite,
  walSync: WalSync | null,
  transaction: () => T,
): Promise<T> {
  if (!walSync) return transaction();
  setPragma(sqlite, 'synchronous = NORMAL');
  let result: T;
  try {
    result = transaction();
  } finally {
    setPragma(sqlite, 'synchronous = FULL');
  }
  const synced = walSync.sync();
  // Feed readers are woken once the rows are durable (./changes.ts announceAfterCommit).
  durability(sqlite).pending = synced.catch(() => {});
  await synced;
  return result;
}
