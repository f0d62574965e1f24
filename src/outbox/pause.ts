import type { Statement } from 'better-sqlite3';
import type { Sqlite } from '../db/open.js';
import { perHandle } from '../db/perHandle.js';

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

/** The current pause, or null when sending runs. */
export function readPause(sqlite: Sqlite): OutboxPause | null {
  const row = statements(sqlite).get.get(PAUSE_KEY);
  return row ? pauseFromRecord(row.value, row.updated_at) : null;
}

/** The pause a `daemon_state` record holds, on either store (an unreadable one still pauses). */
export function pauseFromRecord(value: string, updatedAt: string): OutboxPause {
  try {
    return JSON.parse(value) as OutboxPause;
  } catch {
    return { reason: 'unreadable pause record', status: null, since: updatedAt };
  }
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
