import type pg from 'pg';
import { errorMessage } from '../errors.js';
import type { Logger } from '../log.js';
import { type OutboxPause, PAUSE_KEY, type PauseRecord, parsePauseValue } from './pause.js';

/**
 * The dispatcher's pause record in PostgreSQL's `daemon_state`, shared by every replica and read by
 * `vcu-sync status`. The dispatcher decides a pause inside a settle's turn, synchronously, so this
 * record reads ahead (once, when made) and writes behind: each write is one statement sent in order,
 * a failure logged (the pause itself holds in this process either way; only what status shows lags).
 */
export async function loadPgPauseRecord(
  pool: pg.Pool,
  log: Logger,
): Promise<PauseRecord & { settled(): Promise<void> }> {
  const { rows } = await pool.query<{ value: string; at: string }>(
    `SELECT value, to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at
     FROM daemon_state WHERE key = $1`,
    [PAUSE_KEY],
  );
  let current: OutboxPause | null = rows[0] ? parsePauseValue(rows[0].value, rows[0].at) : null;
  // One write after another, so a clear never overtakes the write it follows.
  let tail: Promise<void> = Promise.resolve();
  const send = (text: string, params: unknown[]) => {
    tail = tail.then(
      () =>
        pool.query(text, params).then(
          () => undefined,
          (err: unknown) =>
            log.warn(
              { event: 'outbox.pause_record_failed', error: errorMessage(err) },
              'could not record the outbox pause in the database; status may not show it',
            ),
        ),
      () => undefined,
    );
  };
  return {
    /** Resolves once every write made so far has been sent (and answered or logged). */
    settled: () => tail,
    read: () => current,
    write(pause, nowIso) {
      current = { ...pause, since: current?.since ?? pause.since };
      send(
        `INSERT INTO daemon_state (key, value, updated_at) VALUES ($1, $2, $3)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
        [PAUSE_KEY, JSON.stringify(current), nowIso],
      );
      return current;
    },
    clear() {
      current = null;
      send('DELETE FROM daemon_state WHERE key = $1', [PAUSE_KEY]);
    },
  };
}
