/**
 * SQLite's side of a daemon part run in a worker thread (thread/host.ts, thread/workerSide.ts): the
 * worker opens its own connection to the daemon's file, refuses writes when the main thread found
 * the file damaged, gives way to the API's commits at the writer gate, and checkpoints the WAL.
 *
 * While any worker runs, the main connection does not checkpoint the WAL: the workers do, since
 * copying pages into the file and its fsync were the longest stalls left on the API's loop.
 */

import { errorMessage } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import type { Config } from '../config/config.js';
import type { HostedStore, WorkerStore } from '../thread/messages.js';
import { databaseFaultsFor } from './faults.js';
import { type OpenDatabase, openDatabase, type Sqlite } from './open.js';
import { boundWal } from './walBound.js';
import { purgeWalIfOwed } from './walPurge.js';
import { useWriterGate, writerGateBuffer } from './writerGate.js';

/** How a worker opens the daemon's file: structured-cloned into its settings. */
interface SqliteOpening {
  /** What the main thread's integrity check found damaged, if anything: the worker writes nothing then. */
  corruption: string | null;
  /** The process's writer gate (writerGate.ts), shared so bulk writes give way to the API's. */
  writerGate: SharedArrayBuffer;
}

/**
 * The WAL is checkpointed in the workers, off the API's loop, and kept within its bound
 * (walBound.ts): often, so that a burst of writes (5,000 webhooks a second write ~60 MiB of WAL) is
 * copied back in small steps.
 */
const CHECKPOINT_EVERY_MS = 100;

/** Workers running now, per main connection: it checkpoints again when none is left. */
const checkpointingWorkers = new WeakMap<Sqlite, number>();

/** The main thread's side: what the workers of the daemon owning `sqlite` are started with. */
export function sqliteHostedStore(sqlite: Sqlite): HostedStore {
  const faults = databaseFaultsFor(sqlite);
  const damage = () => faults.facts().corruption?.detail ?? null;
  return {
    damage,
    opening: (): SqliteOpening => ({ corruption: damage(), writerGate: writerGateBuffer() }),
    workerStarted() {
      checkpointingWorkers.set(sqlite, (checkpointingWorkers.get(sqlite) ?? 0) + 1);
      sqlite.pragma('wal_autocheckpoint = 0');
    },
    // This connection checkpoints again as SQLite does by default (every 1000 pages of WAL) once no worker does.
    workerEnded() {
      const left = Math.max(0, (checkpointingWorkers.get(sqlite) ?? 1) - 1);
      checkpointingWorkers.set(sqlite, left);
      if (left > 0) return;
      try {
        if (sqlite.open) sqlite.pragma('wal_autocheckpoint = 1000');
      } catch {
        // A closed or failed connection checkpoints nothing either way.
      }
    },
  };
}

/** A worker's own connection to the daemon's file. */
export interface SqliteWorkerStore extends WorkerStore {
  readonly database: OpenDatabase;
}

/**
 * The worker's side: its own connection, opened with what the main thread sent (`opening`).
 * `synchronous`: this thread's, when its commits need not reach the disk one by one (default:
 * `database.synchronous`). Under NORMAL a commit writes the WAL without syncing it; the WAL is
 * synced by the next checkpoint (this thread makes one every {@link CHECKPOINT_EVERY_MS}) or the
 * main connection's next durable commit, whichever comes first.
 */
export function openSqliteWorkerStore(
  opening: unknown,
  config: Config,
  log: Logger,
  synchronous: 'full' | 'normal' = config.database.synchronous,
): SqliteWorkerStore {
  const { corruption, writerGate } = opening as SqliteOpening;
  useWriterGate(writerGate);
  const database = openDatabase(config.database.path, {
    migrate: false,
    synchronous,
    // Waiting for the API's commit blocks only this thread: wait as long as the configured timeout.
    busyTimeoutMs: config.database.busy_timeout_ms,
  });
  // A damaged file takes no writes from either connection (query_only), as the main thread decided.
  const faults = databaseFaultsFor(database.sqlite);
  if (corruption) faults.markCorrupt(corruption, 'integrity-check');
  let checkpoints: NodeJS.Timeout | undefined;
  return {
    database,
    markDamaged: (detail) => faults.markCorrupt(detail, 'integrity-check'),
    start() {
      checkpoints = setInterval(() => {
        if (faults.facts().corruption) return;
        try {
          purgeWalIfOwed(database.sqlite);
          const { frames, full } = boundWal(database.sqlite, config.database.wal_bound_mib);
          if (full) log.debug({ event: 'database.wal.bounded', frames }, 'WAL checkpointed in full');
        } catch (err) {
          log.warn({ event: 'database.checkpoint_failed', error: errorMessage(err) }, errorMessage(err));
        }
      }, CHECKPOINT_EVERY_MS);
    },
    close() {
      clearInterval(checkpoints);
      database.close();
    },
  };
}
