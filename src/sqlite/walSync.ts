import { closeSync, fsync, openSync } from 'node:fs';
import { durability } from './changes.js';
import type { Sqlite } from './open.js';
import { perHandle } from './perHandle.js';

/**
 * The group commit's fsync, off the event loop. With `synchronous = FULL` SQLite fsyncs the WAL
 * inside COMMIT, on the thread that commits: profiles of the daemon showed the loop blocked there
 * 38 % of the time under webhooks and 41 % while draining the outbox (the same runs with
 * `synchronous = NORMAL`, no fsync, took webhooks from 0.55x to 0.96x of a bare handler).
 *
 * So a group commit runs with `synchronous = NORMAL` (SQLite writes the WAL frames, does not sync
 * them), and its callers are answered only after `fsync` of the WAL file has run in libuv's thread
 * pool. Meanwhile the loop goes on parsing, verifying and committing the next group, whose own
 * fsync follows. A 201 or a webhook 2xx still means the row is on disk. What others may see sooner:
 * a committed row is visible to readers a moment before it is durable (only a power loss in that
 * moment takes it back, together with everything after it: the WAL loses a suffix, never a hole).
 *
 * Checkpoints are unchanged: under NORMAL SQLite still syncs the WAL before copying it into the
 * database file and syncs the file after. Linux syncs the inode whatever descriptor asks, so a
 * read-only descriptor of the WAL file is enough. The WAL file stays the same file while a
 * connection is open (it is truncated, never replaced).
 */
export class WalSync {
  private fd: number | null = null;
  /** The fsync in flight, if any. */
  private running: Promise<void> | null = null;
  /** Waiters for an fsync that starts after the one in flight (their frames may postdate its start). */
  private next: Promise<void> | null = null;

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

  /** Resolves once everything this connection committed before the call is on disk. */
  sync(): Promise<void> {
    if (!this.running) {
      this.running = this.fsyncOnce().finally(() => {
        this.running = null;
      });
      return this.running;
    }
    if (!this.next) {
      const after = this.running.catch(() => {});
      this.next = after.then(() => {
        this.next = null;
        return this.sync();
      });
    }
    return this.next;
  }

  private fsyncOnce(): Promise<void> {
    return new Promise((resolve, reject) => {
      let fd: number;
      try {
        this.fd ??= openSync(this.walPath, 'r');
        fd = this.fd;
      } catch (err) {
        reject(err);
        return;
      }
      fsync(fd, (err) => (err ? reject(err) : resolve()));
    });
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
  sqlite.pragma('synchronous = NORMAL');
  let result: T;
  try {
    result = transaction();
  } finally {
    sqlite.pragma('synchronous = FULL');
  }
  const synced = walSync.sync();
  // Feed readers are woken once the rows are durable (./changes.ts announceAfterCommit).
  durability(sqlite).pending = synced.catch(() => {});
  await synced;
  return result;
}
