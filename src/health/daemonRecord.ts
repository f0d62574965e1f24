import type { Sqlite } from '../sqlite/open.js';

/**
 * The running daemon's record in `daemon_state`: when it started, as which instance and pid, so
 * `vcu-sync status` (another process) can show the daemon's uptime. Written at start-up, removed
 * at a graceful stop; a record left by a killed daemon is overwritten by the next start.
 */
export interface DaemonRecord {
  startedAt: string;
  pid: number;
  instance: string;
  version: string;
}

const KEY = 'daemon';

export function writeDaemonRecord(sqlite: Sqlite, record: DaemonRecord): void {
  sqlite
    .prepare(
      `INSERT INTO daemon_state (key, value, updated_at) VALUES (?, ?, ?)
       ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
    )
    .run(KEY, JSON.stringify(record), record.startedAt);
}

export function clearDaemonRecord(sqlite: Sqlite): void {
  sqlite.prepare('DELETE FROM daemon_state WHERE key = ?').run(KEY);
}

export function readDaemonRecord(sqlite: Sqlite): DaemonRecord | null {
  const row = sqlite.prepare('SELECT value FROM daemon_state WHERE key = ?').pluck().get(KEY) as
    | string
    | undefined;
  if (!row) return null;
  try {
    return JSON.parse(row) as DaemonRecord;
  } catch {
    return null;
  }
}
