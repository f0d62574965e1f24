import { statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { errorMessage } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import { startWorker } from '../process/startWorker.js';
import { classifyDatabaseError, databaseFaultsFor } from './faults.js';
import type { OpenDatabase, Sqlite } from './open.js';

/** What `PRAGMA quick_check` found: "ok", or the first problems it listed. */
export type CheckResult = { ok: true } | { ok: false; detail: string } | { error: string };

/** Most problem lines quick_check reports; one is enough to refuse writes, a few help the report. */
const MAX_ERRORS = 5;

/** Reads quick_check's rows into a result (pure). */
export function checkResult(lines: readonly string[]): CheckResult {
  if (lines.length === 1 && lines[0] === 'ok') return { ok: true };
  return { ok: false, detail: lines.join('; ').slice(0, 500) || 'no result' };
}

/** quick_check on a connection, with a corrupt page that stops the check itself counted as corruption. */
export function quickCheck(sqlite: Sqlite): CheckResult {
  try {
    const rows = sqlite.pragma(`quick_check(${MAX_ERRORS})`) as Array<Record<string, unknown>>;
    return checkResult(rows.map((row) => String(Object.values(row)[0])));
  } catch (err) {
    if (classifyDatabaseError(err) === 'corrupt') return { ok: false, detail: errorMessage(err) };
    return { error: errorMessage(err) };
  }
}

/**
 * The background check: its own read-only connection in a worker thread, so a check of a large file
 * never holds the event loop. Inline CommonJS, so it runs the same from src/ (tsx) and dist/.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
let db;
try {
  db = new Database(workerData.file, { readonly: true, fileMustExist: true });
  const rows = db.pragma('quick_check(' + workerData.maxErrors + ')', { simple: false });
  parentPort.postMessage({ lines: rows.map((r) => String(Object.values(r)[0])) });
} catch (err) {
  parentPort.postMessage({ code: err && err.code, message: String(err && err.message) });
} finally {
  if (db) db.close();
}
`;

function quickCheckInWorker(file: string): Promise<CheckResult> {
  const module = createRequire(import.meta.url).resolve('better-sqlite3');
  return new Promise((resolve) => {
    const worker = startWorker(WORKER_SOURCE, {
      eval: true,
      workerData: { file, module, maxErrors: MAX_ERRORS },
    });
    // A stopping daemon does not wait for a check of a large file.
    worker.unref();
    worker.once('message', (msg: { lines?: string[]; code?: string; message?: string }) => {
      if (msg.lines) resolve(checkResult(msg.lines));
      else if (classifyDatabaseError({ code: msg.code }) === 'corrupt')
        resolve({ ok: false, detail: msg.message ?? 'corrupt' });
      else resolve({ error: msg.message ?? 'unknown error' });
    });
    worker.once('error', (err) => resolve({ error: errorMessage(err) }));
  });
}

function fileBytes(file: string): number {
  let bytes = 0;
  for (const f of [file, `${file}-wal`]) {
    try {
      bytes += statSync(f).size;
    } catch {
      // No WAL yet.
    }
  }
  return bytes;
}

/** Options of {@link prepareDaemonDatabase}. */
export interface DaemonDatabaseOptions {
  /** The daemon's short lock wait, ms. */
  busyTimeoutMs: number;
  /** Files up to this size are checked before serving; larger ones in the background, bytes. */
  checkBeforeServingMaxBytes: number;
  log: Logger;
}

/**
 * Readies a database for the daemon: a short lock wait (another process holding the lock must not
 * freeze the event loop; the group commit retries later instead), and a `quick_check` that marks the
 * file corrupt, refusing writes, when pages are damaged. Small files are checked now, before anything
 * is served; larger ones in a worker thread (the returned promise, for tests).
 */
export function prepareDaemonDatabase(database: OpenDatabase, options: DaemonDatabaseOptions): Promise<void> {
  const { log } = options;
  database.sqlite.pragma(`busy_timeout = ${options.busyTimeoutMs}`);
  const bytes = fileBytes(database.path);
  const report = (result: CheckResult, startedMs: number, background: boolean) => {
    const durationMs = Date.now() - startedMs;
    if ('error' in result) {
      log.warn(
        { event: 'database.check.failed', error: result.error, durationMs },
        `database integrity check could not run: ${result.error}`,
      );
    } else if (result.ok) {
      log.info({ event: 'database.check.ok', bytes, durationMs, background }, 'database integrity check ok');
    } else {
      databaseFaultsFor(database.sqlite).markCorrupt(result.detail, 'integrity-check');
      log.error(
        { event: 'database.corrupt', detail: result.detail, bytes, durationMs },
        'database file is damaged: writes are refused; restore it from a backup',
      );
    }
  };
  const started = Date.now();
  if (bytes <= options.checkBeforeServingMaxBytes) {
    report(quickCheck(database.sqlite), started, false);
    return Promise.resolve();
  }
  log.info({ event: 'database.check.started', bytes }, 'database integrity check running in the background');
  return quickCheckInWorker(database.path).then((result) => report(result, started, true));
}
