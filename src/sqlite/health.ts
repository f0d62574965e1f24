import { errorMessage } from '../common/errors.js';
import { EXPECTED_LISTENERS, type ReadinessReader } from '../health/readiness.js';
import type { ClassifyFault } from '../health/refusal.js';
import type { DatabaseFacts, HealthReads } from '../health/snapshot.js';
import { healthReads, PAUSE_ROW, type PauseRow, type SnapshotEdge } from '../health/snapshotReads.js';
import { pauseOf } from '../outbox/pause.js';
import { commitQueueFor, driveSqlite } from './commitQueue.js';
import {
  classifyDatabaseError,
  type DatabaseFaults,
  databaseFaultsFor,
  faultCause,
  sqliteCode,
  unavailableFor,
} from './faults.js';
import { pendingMigrations } from './migrations.js';
import type { Sqlite } from './open.js';
import { runSqlite } from './scripts.js';

/**
 * SQLite's part of health (the statements are ./snapshotReads.ts's): the snapshot in one deferred
 * read transaction, driven synchronously; the file's own faults (write failures, locks,
 * corruption, sqlite/faults.ts); the API's reading of its errors; and /readyz's write probe, which
 * only a write can answer on a file.
 */

/** How SQLite's reads note a failed read: corruption is recorded (a read error is not a failed write). */
function readFailed(sqlite: Sqlite, err: unknown): DatabaseFacts {
  const faults = databaseFaultsFor(sqlite);
  if (classifyDatabaseError(err) === 'corrupt') {
    faults.noteFailure(err);
    return faults.facts();
  }
  const code = sqliteCode(err);
  return { ...faults.facts(), readError: code ? `${code}: ${errorMessage(err)}` : errorMessage(err) };
}

/**
 * SQLite's part of the health reads: its read transaction (deferred: a read never takes the write
 * lock, so `vcu-sync status` in another process never stalls the daemon's writes) and its file's faults.
 */
export function sqliteSnapshotEdge(sqlite: Sqlite): SnapshotEdge {
  return {
    store: { kind: 'sqlite', location: sqlite.name },
    atOneMoment: async (script) => sqlite.transaction(() => driveSqlite(sqlite, script))(),
    databaseFacts: () => databaseFaultsFor(sqlite).facts(),
    readFailed: (err) => readFailed(sqlite, err),
  };
}

/** The health reads of a SQLite database (./health/snapshotReads.ts's statements). */
export function sqliteHealthReads(sqlite: Sqlite): HealthReads {
  return healthReads(commitQueueFor(sqlite), sqliteSnapshotEdge(sqlite));
}

/**
 * The API's reading of a failed request on the file `sqlite()` (read per request: a context reopened
 * meanwhile is read anew): the fault is noted on the handle, so status says what the 503s are about.
 */
export function sqliteClassifyFault(sqlite: () => Sqlite): ClassifyFault {
  return (err) => {
    const kind = databaseFaultsFor(sqlite()).noteFailure(err);
    if (kind === null) return null;
    const { code, message, retryAfterSeconds } = unavailableFor(err, kind);
    return { kind, code, message, retryAfterSeconds };
  };
}

/**
 * Why a write would fail now, or null. SQLite tells some causes only to a write: BEGIN IMMEDIATE
 * succeeds on a file it opened read-only and on a full disk alike (both seen: /readyz said 200
 * while every enqueue got 503). So, cheapest first:
 * 1. every probe: the write lock, taken without waiting (a probe must never hold the event loop in
 *    SQLite's busy wait, which is what it would report), and a write statement run inside it that
 *    changes nothing (`DELETE ... WHERE 0`), which a file opened read-only refuses. No I/O.
 * 2. the fault record's last write outcome (sqlite/faults.ts, where every writer on this connection
 *    reports): a write that failed for want of space or an I/O error, none succeeding since.
 * 3. only while (2) stands: a trial write that commits (a page-sized row added and removed, so it
 *    needs free space as an enqueue does). Its success clears the record, so readiness comes back
 *    once space does even with no traffic: a load balancer sends none to an instance it sees not
 *    ready. A healthy daemon never writes for a probe; a failing trial costs no more than the
 *    refused enqueues around it.
 * Each reason names its cause (`faultCause`), then SQLite's code and words.
 */
export function writeBlocked(
  sqlite: Sqlite,
  busyTimeoutMs: number,
  faults: DatabaseFaults = databaseFaultsFor(sqlite),
): string | null {
  if (sqlite.readonly) return 'database-read-only (this connection was opened read-only)';
  const { corruption } = faults.facts();
  if (corruption) return `database-corrupt (${corruption.detail})`;
  // Inside a transaction this connection already holds the write lock.
  if (sqlite.inTransaction) return recordedFailure(faults);
  sqlite.pragma('busy_timeout = 0');
  try {
    const refused = attempt(() => {
      sqlite.exec('BEGIN IMMEDIATE');
      try {
        sqlite.exec(`DELETE FROM daemon_state WHERE 0`);
      } finally {
        sqlite.exec('ROLLBACK');
      }
    });
    if (refused) return refused;
    if (!faults.facts().writeFailure) return null;
    const trial = attempt(() => trialWrite(sqlite));
    if (trial === null) faults.noteWriteSucceeded();
    return trial;
  } finally {
    sqlite.pragma(`busy_timeout = ${busyTimeoutMs}`);
  }
}

/** The recorded write failure as a reason, or null. */
function recordedFailure(faults: DatabaseFaults): string | null {
  const failure = faults.facts().writeFailure;
  return failure && `${faultCause(failure.code)} (${failure.code}: ${failure.message})`;
}

/** Runs `write`: null when it went through, otherwise the reason it did not. */
function attempt(write: () => void): string | null {
  try {
    write();
    return null;
  } catch (err) {
    const code = sqliteCode(err);
    return code ? `${faultCause(code)} (${code}: ${errorMessage(err)})` : errorMessage(err);
  }
}

/** The `daemon_state` key of the trial write; never left behind (added and removed in one commit). */
const TRIAL_KEY = 'readiness-trial';

/** A committed write that needs a page of free space and leaves the data as it was. */
function trialWrite(sqlite: Sqlite): void {
  const pageSize = sqlite.pragma('page_size', { simple: true }) as number;
  sqlite
    .transaction(() => {
      sqlite
        .prepare('INSERT INTO daemon_state (key, value, updated_at) VALUES (?, ?, ?)')
        .run(TRIAL_KEY, 'x'.repeat(pageSize), new Date().toISOString());
      sqlite.prepare('DELETE FROM daemon_state WHERE key = ?').run(TRIAL_KEY);
    })
    .immediate();
}

/** SQLite's facts reader (the file always answers; a lock held elsewhere is `writeBlocked`). */
export function sqliteReadiness(sqlite: Sqlite, busyTimeoutMs: number): ReadinessReader {
  return (listeners) => ({
    databaseUnanswered: null,
    listeners: new Set(listeners.keys()),
    expectedListeners: EXPECTED_LISTENERS,
    writeBlocked: writeBlocked(sqlite, busyTimeoutMs),
    pendingMigrations: pendingMigrations(sqlite),
    sendingPaused: pauseOf(runSqlite(sqlite, PAUSE_ROW).rows[0] as PauseRow | undefined)?.reason ?? null,
  });
}
