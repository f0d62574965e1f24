import { ageMs, formatDuration } from './durations.js';
import type { Problem, RuleInputs } from './problems.js';
import type { HealthSnapshot } from './snapshot.js';

/**
 * The database's problems, from what the daemon's own reads and writes met (a file's faults) or
 * whether the server can be reached at all (a server store): a rule group of `judge` (./rules.ts) in a file of its own.
 */

/** Writes finding the lock held by another process this long is a warning (ms). */
export const LOCK_WARNING_MS = 10_000;

export function databaseProblems(snapshot: HealthSnapshot, inputs: RuleInputs): Problem[] {
  const problems: Problem[] = [];
  const { corruption, readError, readAction, writeFailure, lockedSince, unreachable } = snapshot.database;
  if (unreachable) {
    const since = ageMs(unreachable.since, inputs.now);
    problems.push({
      severity: 'critical',
      code: 'database-unreachable',
      message: `PostgreSQL cannot be reached${since === null ? '' : ` for ${formatDuration(since)}`}: ${unreachable.reason}; the API and webhooks answer 503, nothing is sent or recorded until it is back`,
      action:
        unreachable.action ??
        'check the database server and the network to it; the daemon reconnects on its own, no restart needed',
    });
  }
  if (corruption) {
    problems.push({
      severity: 'critical',
      code: 'database-corrupt',
      message: `the database file is damaged (${corruption.source === 'integrity-check' ? 'quick_check' : 'a query'} found: ${corruption.detail}); every write is refused since ${corruption.at}`,
      action:
        'stop the daemon, put the newest backup (vcu-sync db backup, the backup timer) in place of the file and its -wal/-shm, start it, re-queue operations queued since the backup (docs/operations.md "Backup and restore")',
    });
  }
  if (readError) {
    problems.push({
      severity: 'critical',
      code: 'database-unreadable',
      message: `status cannot read the database: ${readError}`,
      action:
        readAction ??
        'check the file, its permissions and its disk (I/O errors in the kernel log); run vcu-sync status to read it from another process',
    });
  }
  if (writeFailure) {
    problems.push({
      severity: 'critical',
      code: 'database-write-failed',
      message: `database writes fail since ${writeFailure.since} (${writeFailure.failures} failed, latest ${writeFailure.lastAt}): ${writeFailure.code}: ${writeFailure.message}`,
      action:
        'free disk space, or make the database, its -wal and -shm writable by the service user; this clears at the next write that succeeds (a file the daemon opened read-only needs a restart)',
    });
  }
  const locked = ageMs(lockedSince, inputs.now);
  if (locked !== null && locked >= LOCK_WARNING_MS) {
    problems.push({
      severity: 'warning',
      code: 'database-locked',
      message: `another process has held the database's write lock for ${formatDuration(locked)}: writes wait, API writes answer 503`,
      action:
        'find the process holding it (fuser or lsof on the database file): a long vcu-sync command or a SQL client with an open transaction; end it',
    });
  }
  return problems;
}
