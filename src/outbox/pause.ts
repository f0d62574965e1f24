import { putDaemonState } from '../store/daemonState.js';
import { first, run, type Script, type ScriptStore } from '../store/script.js';
import { raw, sql, whenShared } from '../store/sql.js';

/** The `daemon_state` key under which a paused dispatcher records why and since when. */
export const PAUSE_KEY = 'outbox.paused';

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

/** Where a dispatcher keeps its pause record: `daemon_state` of the outbox's database. */
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

/** The record's row; locked where processes share the store, so two writers keep one `since`. */
const pauseRow = (lock: boolean) => sql`
  SELECT value, updated_at FROM daemon_state
   WHERE key = ${PAUSE_KEY}${lock ? whenShared(raw(' FOR UPDATE')) : raw('')}`;

/** Records the pause; an existing one keeps its `since`. */
function* writePause(pause: OutboxPause, nowIso: string): Script<OutboxPause> {
  const kept = { ...pause, since: pauseOf(yield* first(pauseRow(true)))?.since ?? pause.since };
  yield* run(putDaemonState(PAUSE_KEY, JSON.stringify(kept), nowIso));
  return kept;
}

/** The pause record in the store's `daemon_state`, shared by every process on it. */
export function pauseRecord(store: ScriptStore): PauseRecord {
  return {
    read: async () => pauseOf((await store.read<{ value: string; updated_at: string }>(pauseRow(false)))[0]),
    write: (pause, nowIso) => store.transaction(writePause(pause, nowIso)),
    clear: async () => {
      await store.read(sql`DELETE FROM daemon_state WHERE key = ${PAUSE_KEY}`);
    },
  };
}
