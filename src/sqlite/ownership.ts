import { closeSync, existsSync, mkdirSync, openSync, readSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { EXIT_CONFIG, UserError } from '../common/errors.js';
import { DAEMON_RECORD_KEY } from '../health/snapshotReads.js';
import { putDaemonState } from '../store/daemonState.js';
import { createPrivateFile } from './fileMode.js';
import { holderOfLockNamed } from './lockHolders.js';
import { lockFileProblem } from './lockProblem.js';
import type { Sqlite } from './open.js';
import { runSqlite } from './scripts.js';

/**
 * One daemon per SQLite file.
 *
 * The daemon holds an exclusive SQLite lock on a side file, `<database>.lock`, for as long as it
 * runs. SQLite locks are POSIX advisory locks (fcntl) that the kernel drops the moment the process
 * ends, however it ends (SIGTERM, SIGKILL, the OOM killer, a crash in native code): a stale lock
 * cannot exist, so a restart after a kill is never blocked, and pid reuse cannot fool it. A pid file
 * with a liveness check (`kill(pid, 0)` plus the start time) gets both of those only approximately
 * and its stale-file cleanup races with a second starter; Node has no flock, but SQLite brings the
 * same kernel lock through better-sqlite3, which the daemon already loads. A side file, not the
 * database itself: readers (`status`, `sync`, SQL readers, backups) must keep using the database.
 *
 * The holder writes its pid into the side file's header (`user_version`) in the transaction that
 * takes the lock; with `locking_mode = EXCLUSIVE` the lock outlives that commit until the
 * connection closes. A second starter that finds the lock taken reads the pid from the header's
 * bytes directly (an advisory lock does not stop a plain read), to name the running daemon.
 *
 * The file is never deleted, not even on a clean stop: deleting a lock file that another process
 * may just have opened lets a third create a new one, and two would own the database.
 *
 * A path names a file only until someone links it elsewhere. SQLite keys its `-wal` and `-shm` to
 * the path it was given, so a second daemon through a hard link (`ln vcu.db other.db`) would write
 * the same file through a WAL of its own: corruption. So the daemon holds a second lock, keyed to
 * the file itself: `vcu-sync-file-<device>-<inode>.lock` in the file's folder, the same name from
 * every path to it. Why not lock a byte of the database itself: Node has no fcntl, and SQLite
 * locks only its own bytes, taking them through its WAL machinery, which creates the very
 * `-wal`/`-shm` beside the second path. Why not a runtime folder keyed to the inode: the shipped
 * unit (DynamicUser, PrivateTmp, ProtectSystem=strict) shares no writable folder with a shell
 * besides the database's own. A hard link in another folder has its inode lock there, out of sight:
 * so a file with more than one link is refused outright (a link nobody uses today is the next
 * start's second WAL), naming the daemon that holds the lock over there when /proc shows it
 * (./lockHolders.ts), else with a line saying how to find the links. Both locks are taken before the
 * database is opened; the path lock stays for the other case, another file moved to the same path
 * under a running daemon.
 */

/** Exit status of a `vcu-sync run` refused because another daemon owns the database (EX_TEMPFAIL). */
export const EXIT_DATABASE_OWNED = 75;

/** The lock a running daemon holds on its database. */
export interface Ownership {
  /** The side file holding the lock on the path. */
  readonly lockPath: string;
  /** The side file holding the lock on the file itself (device and inode), when it is a file. */
  readonly fileLockPath: string | undefined;
  /** Releases the lock (idempotent). The file stays. */
  release(): void;
}

/** Options of {@link acquireOwnership}. */
export interface AcquireOptions {
  /** How long to keep re-reading the holder's pid while it is committing it, ms (default: 2000). */
  pidWaitMs?: number;
}

/** Locks held by this process, by lock file: a second acquire here must not read the file raw. */
const held = new Map<string, number>();

/** Whether a process with this pid exists (EPERM means it does, owned by someone else). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The side file that guards `databasePath`, from the real path, so a symlink or a relative path to
 * the same database finds the same lock.
 */
export function lockPathFor(databasePath: string): string {
  const resolved = path.resolve(databasePath);
  if (existsSync(resolved)) return `${realpathSync(resolved)}.lock`;
  const dir = path.dirname(resolved);
  const realDir = existsSync(dir) ? realpathSync(dir) : dir;
  return `${path.join(realDir, path.basename(resolved))}.lock`;
}

/** A database file's identity, the same through every path to it (bigint: inodes may pass 2^53). */
export interface FileIdentity {
  dev: bigint;
  ino: bigint;
  /** How many names the file has. */
  nlink: bigint;
}

/** The identity of the regular file at `databasePath`, or undefined when there is none. */
export function fileIdentity(databasePath: string): FileIdentity | undefined {
  try {
    const stat = statSync(databasePath, { bigint: true });
    return stat.isFile() ? { dev: stat.dev, ino: stat.ino, nlink: stat.nlink } : undefined;
  } catch {
    return undefined;
  }
}

/** The side file that guards the file itself, in its real folder, named after its identity. */
export function fileLockPathFor(databasePath: string, id: Pick<FileIdentity, 'dev' | 'ino'>): string {
  const dir = path.dirname(realpathSync(path.resolve(databasePath)));
  return path.join(dir, `vcu-sync-file-${id.dev}-${id.ino}.lock`);
}

/** Offset and magic of a SQLite header; `user_version` is a big-endian 32-bit integer at 60. */
const SQLITE_MAGIC = 'SQLite format 3\0';
const USER_VERSION_AT = 60;

/**
 * The pid recorded in a lock file's header, undefined when there is none yet. Never call it on a
 * lock this process holds: closing any descriptor of a file drops the process's fcntl locks on it.
 */
export function readHolderPid(lockPath: string): number | undefined {
  let fd: number;
  try {
    fd = openSync(lockPath, 'r');
  } catch {
    return undefined;
  }
  try {
    const header = Buffer.alloc(100);
    const n = readSync(fd, header, 0, header.length, 0);
    if (n < 100 || header.toString('latin1', 0, 16) !== SQLITE_MAGIC) return undefined;
    const pid = header.readInt32BE(USER_VERSION_AT);
    return pid > 0 ? pid : undefined;
  } finally {
    closeSync(fd);
  }
}

function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
}

/** The one line a refused start prints (pure). */
export function ownedMessage(databasePath: string, pid: number | undefined): string {
  const who = pid === undefined ? 'another vcu-sync daemon' : `another vcu-sync daemon (pid ${pid})`;
  return `database ${databasePath} is in use by ${who}; only one daemon may run on a SQLite file`;
}

/** The one line a start on a file with other names prints (pure). */
export function linkedMessage(databasePath: string, links: bigint): string {
  return `database ${databasePath} has ${links} hard links; SQLite keys its -wal and -shm to the path, so a second path to the file corrupts it: remove the other links (find them with find <mount point> -xdev -samefile ${databasePath}) and run every vcu-sync on one path`;
}

/**
 * Takes the lock or throws a UserError (exit {@link EXIT_DATABASE_OWNED}) naming the database and
 * the running daemon's pid. Call it before the database is opened, so a refused start touches
 * nothing (no migration, no write).
 */
export async function acquireOwnership(
  databasePath: string,
  options: AcquireOptions = {},
): Promise<Ownership> {
  const dir = path.dirname(path.resolve(databasePath));
  // As openDatabase does: create only the last folder level.
  if (!existsSync(dir) && existsSync(path.dirname(dir))) mkdirSync(dir);
  const lockPath = lockPathFor(databasePath);
  const pidWaitMs = options.pidWaitMs ?? 2_000;
  const pathLock = await takeLock(lockPath, databasePath, pidWaitMs);
  let fileLock: HeldLock | undefined;
  try {
    fileLock = await lockTheFile(databasePath, pidWaitMs);
  } catch (err) {
    pathLock.release();
    throw err;
  }
  return {
    lockPath,
    fileLockPath: fileLock?.path,
    release() {
      fileLock?.release();
      pathLock.release();
    },
  };
}

/**
 * The lock on the database file itself, created empty first if need be (SQLite takes an empty file
 * as a new database) so that it has an identity; undefined when the path is not a regular file,
 * which opening it then reports. Refuses a file with more than one name.
 */
async function lockTheFile(databasePath: string, pidWaitMs: number): Promise<HeldLock | undefined> {
  try {
    createPrivateFile(databasePath);
  } catch {
    // Not creatable here (a folder not writable, ...): opening the database says why.
  }
  const id = fileIdentity(databasePath);
  if (!id) return undefined;
  const fileLockPath = fileLockPathFor(databasePath, id);
  const lock = await takeLock(fileLockPath, databasePath, pidWaitMs);
  // Read after the lock: a daemon through another link in this folder has been refused by now.
  const links = fileIdentity(databasePath)?.nlink ?? id.nlink;
  if (links > 1n) {
    lock.release();
    // A daemon through a link in another folder holds the same name there: named when it can be seen.
    const owner = holderOfLockNamed(path.basename(fileLockPath), fileLockPath);
    if (owner !== undefined) throw new UserError(ownedMessage(databasePath, owner), EXIT_DATABASE_OWNED);
    throw new UserError(linkedMessage(databasePath, links), EXIT_CONFIG);
  }
  return lock;
}

/** One lock file held by this process. */
interface HeldLock {
  readonly path: string;
  release(): void;
}

/** Takes the exclusive lock on `lockPath` or throws the UserError naming its holder. */
async function takeLock(lockPath: string, databasePath: string, pidWaitMs: number): Promise<HeldLock> {
  const mine = held.get(lockPath);
  if (mine !== undefined) throw new UserError(ownedMessage(databasePath, mine), EXIT_DATABASE_OWNED);

  let lock: Database.Database;
  try {
    lock = new Database(lockPath);
  } catch (err) {
    throw lockFileProblem(lockPath, err, `cannot open the lock file ${lockPath}`);
  }
  try {
    // No waiting: a lock that is held belongs to a live process, and it keeps it.
    lock.pragma('busy_timeout = 0');
    lock.pragma('locking_mode = EXCLUSIVE');
    lock.exec('BEGIN EXCLUSIVE');
    lock.pragma(`user_version = ${process.pid}`);
    lock.exec('COMMIT');
  } catch (err) {
    lock.close();
    if (!isBusy(err)) throw lockFileProblem(lockPath, err, `cannot lock ${lockPath}`);
    const pid = await holderPid(lockPath, pidWaitMs);
    throw new UserError(ownedMessage(databasePath, pid), EXIT_DATABASE_OWNED);
  }
  held.set(lockPath, process.pid);
  return {
    path: lockPath,
    release() {
      if (!lock.open) return;
      lock.close();
      held.delete(lockPath);
    },
  };
}

/**
 * The running holder's pid. Between taking the lock and committing its pid, the header still names
 * the previous (dead) holder or none: re-read briefly until it names a live process.
 */
async function holderPid(lockPath: string, waitMs: number): Promise<number | undefined> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const pid = readHolderPid(lockPath);
    if (pid !== undefined && pidAlive(pid)) return pid;
    if (Date.now() >= deadline) return undefined;
    await delay(10);
  }
}

/**
 * The running daemon's record in `daemon_state`: when it started, as which instance and pid, so
 * `vcu-sync status` (another process) can show the daemon's uptime (health/snapshotReads.ts reads
 * it). Written at start-up, removed at a graceful stop; a record left by a killed daemon is
 * overwritten by the next start.
 */
export interface DaemonRecord {
  startedAt: string;
  pid: number;
  instance: string;
  version: string;
}

export function writeDaemonRecord(sqlite: Sqlite, record: DaemonRecord): void {
  runSqlite(sqlite, putDaemonState(DAEMON_RECORD_KEY, JSON.stringify(record), record.startedAt));
}

export function clearDaemonRecord(sqlite: Sqlite): void {
  sqlite.prepare('DELETE FROM daemon_state WHERE key = ?').run(DAEMON_RECORD_KEY);
}
