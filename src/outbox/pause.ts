import type { Sqlite } from '../db/open.js';
import { outboxQueries, PAUSE_KEY } from './queries.js';

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
  const row = outboxQueries(sqlite).getState.get(PAUSE_KEY);
  if (!row) return null;
  try {
    return JSON.parse(row.value) as OutboxPause;
  } catch {
    return { reason: 'unreadable pause record', status: null, since: row.updated_at };
  }
}

/** Records the pause; an existing one keeps its `since`. */
export function writePause(sqlite: Sqlite, pause: OutboxPause, nowIso: string): OutboxPause {
  const kept = { ...pause, since: readPause(sqlite)?.since ?? pause.since };
  outboxQueries(sqlite).setState.run({ key: PAUSE_KEY, value: JSON.stringify(kept), now: nowIso });
  return kept;
}

export function clearPause(sqlite: Sqlite): void {
  outboxQueries(sqlite).deleteState.run(PAUSE_KEY);
}
