import { type DatabaseFaults, databaseFaultsFor, faultCause, sqliteCode } from '../db/faults.js';
import { pendingMigrations } from '../db/migrations.js';
import type { Sqlite } from '../db/open.js';
import { errorMessage } from '../errors.js';
import { readPause } from '../outbox/pause.js';

/**
 * Readiness, beside liveness: `/healthz` says the process answers (restart it if not); `/readyz`
 * says this instance can do its job now (send it traffic): the database takes writes, its schema
 * is current, both listeners are up and sending to the operator is not paused. A pure judge over
 * facts gathered by a thin edge, so each not-ready case is a row in a table test.
 */
export interface ReadinessFacts {
  /** null when the database answered; otherwise why not (its error, or no answer within the bound). */
  databaseUnanswered: string | null;
  /** PostgreSQL only: why the server cannot be reached at all (refused, shut down, cut), else null. */
  databaseUnreachable?: string | null;
  /** Listeners up now, by component name. */
  listeners: ReadonlySet<string>;
  /** Listeners this daemon runs. */
  expectedListeners: readonly string[];
  /** null when a write would succeed now; otherwise why not, its cause first (see writeBlocked). */
  writeBlocked: string | null;
  /** Migrations shipped with this build that the database has not applied. */
  pendingMigrations: number;
  /** Why sending is paused, or null. */
  sendingPaused: string | null;
}

export interface Readiness {
  ready: boolean;
  /** Every reason it is not ready, one line each (empty when ready). */
  reasons: string[];
}

export function judgeReadiness(facts: ReadinessFacts): Readiness {
  const reasons: string[] = [];
  if (facts.databaseUnreachable) reasons.push(`database-unreachable: ${facts.databaseUnreachable}`);
  if (facts.databaseUnanswered) reasons.push(`database not answering: ${facts.databaseUnanswered}`);
  if (facts.writeBlocked) reasons.push(`database not writable: ${facts.writeBlocked}`);
  if (facts.pendingMigrations > 0)
    reasons.push(`database schema behind: ${facts.pendingMigrations} migration(s) not applied`);
  for (const name of facts.expectedListeners) {
    if (!facts.listeners.has(name)) reasons.push(`${name} not listening`);
  }
  if (facts.sendingPaused) reasons.push(`sending paused: ${facts.sendingPaused}`);
  return { ready: reasons.length === 0, reasons };
}

/**
 * Why a write would fail now, or null. SQLite tells some causes only to a write: BEGIN IMMEDIATE
 * succeeds on a file it opened read-only and on a full disk alike (both seen: /readyz said 200
 * while every enqueue got 503). So, cheapest first:
 * 1. every probe: the write lock, taken without waiting (a probe must never hold the event loop in
 *    SQLite's busy wait, which is what it would report), and a write statement run inside it that
 *    changes nothing (`DELETE ... WHERE 0`), which a file opened read-only refuses. No I/O.
 * 2. the fault record's last write outcome (db/faults.ts, where every writer on this connection
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

/**
 * Reads the facts /readyz judges, given the listeners up now: SQLite's ({@link sqliteReadiness})
 * or PostgreSQL's (./pgReadiness.ts). Either answers within a bound: it never waits on a lock.
 */
export type ReadinessReader = (
  listeners: ReadonlyMap<string, string>,
) => ReadinessFacts | Promise<ReadinessFacts>;

/** The listeners every daemon runs. */
export const EXPECTED_LISTENERS: readonly string[] = ['api', 'webhook-listener'];

/** SQLite's facts reader (the file always answers; a lock held elsewhere is `writeBlocked`). */
export function sqliteReadiness(sqlite: Sqlite, busyTimeoutMs: number): ReadinessReader {
  return (listeners) => readReadinessFacts(sqlite, listeners, busyTimeoutMs);
}

/** The facts, read now. */
export function readReadinessFacts(
  sqlite: Sqlite,
  listeners: ReadonlyMap<string, string>,
  busyTimeoutMs: number,
): ReadinessFacts {
  return {
    databaseUnanswered: null,
    listeners: new Set(listeners.keys()),
    expectedListeners: EXPECTED_LISTENERS,
    writeBlocked: writeBlocked(sqlite, busyTimeoutMs),
    pendingMigrations: pendingMigrations(sqlite),
    sendingPaused: readPause(sqlite)?.reason ?? null,
  };
}
