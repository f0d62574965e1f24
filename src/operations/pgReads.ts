import type pg from 'pg';
import { iso, operationColumns } from './pgRows.js';
import type { OperationsReads } from './readsSeam.js';
import type { AttemptRow, OperationRow } from './rows.js';

/**
 * The reads of the API's operations routes and `vcu-sync outbox` on PostgreSQL: the statements of
 * reads.ts over the pg outbox tables, each one query on the pool, rows read back as SQLite's
 * (operationColumns: numeric ids, ISO times, SQLite's column order, so entries print the same).
 */
export function pgOperationsReads(pool: pg.Pool): OperationsReads {
  return {
    async byRef(ref) {
      const { rows } = await pool.query<OperationRow>(
        `SELECT ${operationColumns()} FROM outbox WHERE "marketplaceTransactionRef" = $1`,
        [ref],
      );
      return rows[0];
    },
    async attemptsOf(id) {
      const { rows } = await pool.query<AttemptRow>(
        `SELECT id::float8 AS id, outbox_id::float8 AS outbox_id, ${iso('started_at')} AS started_at,
                duration_ms, status_code, error
         FROM outbox_attempts WHERE outbox_id = $1 ORDER BY id`,
        [id],
      );
      return rows;
    },
    async page({ after, state, limit }) {
      const { rows } = await pool.query<OperationRow>(
        `SELECT ${operationColumns()} FROM outbox
         WHERE id > $1 AND ($2::text IS NULL OR state = $2) ORDER BY id LIMIT $3`,
        [after, state, limit],
      );
      return rows;
    },
  };
}
