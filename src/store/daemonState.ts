import { type Sql, sql, typed } from './sql.js';

/**
 * Sets `key` of `daemon_state`, the store's small records of its own (the dispatcher's pause, the
 * reconciler's ledger mark, the SQLite daemon's record), to `value`, written at `at`: one statement
 * for both stores.
 */
export const putDaemonState = (key: string, value: string, at: string): Sql =>
  sql`INSERT INTO daemon_state (key, value, updated_at) VALUES (${key}, ${value}, ${typed(at, 'timestamptz')})
      ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`;
