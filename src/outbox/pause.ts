import type { Statement } from 'better-sqlite3';
import type { Sqlite } from '../sqlite/open.js';
import { perHandle } from '../sqlite/perHandle.js';

/** The `daemon_state` key under which a paused dispatcher records why and since when. */
export const PAUSE_KEY = 'outbox.paused';

const statements = perHandle((sqlite: Sqlite) => ({
  get: sqlite.prepare('SELECT value, updated_at FROM daemon_state WHERE key = ?') as Statement<
    [string],
    { value: string; updated_at: string }
  >,
  set: sqlite.prepare(`
    INSERT INTO daemon_state (key, value, updated_at) VALUES (@key, @value, @now)
    ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`),
  delete: sqlite.prepare('DELETE FROM daemon_state WHERE key = ?'),
}));

/**
 * The shared record of a paused dispatcher (operator answered 401/403). Kept in `daemon_state`
 * so `vcu-sync status` in another process sees it and reports critical.
 */
export interface OutboxPause {
  /** The operator's answer that caused it (secrets already scrubbed). */
  reason: string;
  /** HTTP status that caused it (401 or 403). */
  status: number | null;
  /** When sending first paused (ISO). */
  since: string;
}

/**
 * Where a dispatcher keeps its pause record: `daemon_state` of the outbox's database (SQLite's
 * below, PostgreSQL's in pgHooks.ts). SQLite's does its work when called; its promises are settled.
 */
export interface PauseRecord {
  read(): Promise<OutboxPause | null>;
  /** Records the pause; an existing one keeps its `since`. Resolves with what is recorded. */
  write(pause: OutboxPause, nowIso: string): Promise<OutboxPause>;
  clear(): Promise<void>;
}

/** The pause of a `daemon_state` row as stored (pure: both stores). */
export function pauseOf(row: { value: string; updated_at: string } | undefined): OutboxPause | null {
  if (!row) return null;
  try {
    return JSON.parse(row.value) as OutboxPause;
  } catch {
    return { reason: 'unreadable pause record', status: null, since: row.updated_at };
  }
}

/** The pause record in a SQLite database's `daemon_state`. */
export function sqlitePauseRecord(sqlite: Sqlite): PauseRecord {
  return {
    read: async () => readPause(sqlite),
    write: async (pause, nowIso) => writePause(sqlite, pause, nowIso),
    clear: async () => clearPause(sqlite),
  };
}

/** The current pause, or null when sending runs. */
export function readPause(sqlite: Sqlite): OutboxPause | null {
  return pauseOf(statements(sqlite).get.get(PAUSE_KEY));
}

/** Records the pause; an existing one keeps its `since`. */
export function writePause(sqlite: Sqlite, pause: OutboxPause, nowIso: string): OutboxPause {
  const kept = { ...pause, since: readPause(sqlite)?.since ?? pause.since };
  statements(sqlite).set.run({ key: PAUSE_KEY, value: JSON.stringify(kept), now: nowIso });
  return kept;
}

export function clearPause(sqlite: Sqlite): void {
  statements(sqlite).delete.run(PAUSE_KEY);
}
