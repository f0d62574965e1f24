import type pg from 'pg';
import type { Sqlite } from '../../../src/sqlite/open.js';
import type { SeedTable } from './reconcileSeed.js';

/**
 * Writes the reconciliation bench's books into a store as fast as each allows (not measured):
 * SQLite with one prepared INSERT in transactions of many rows, PostgreSQL with one INSERT ...
 * SELECT FROM unnest(column arrays) per batch.
 */

const SQLITE_ROWS_PER_TRANSACTION = 50_000;
const PG_ROWS_PER_STATEMENT = 5_000;

const quoted = (name: string) => `"${name}"`;

export function loadSqlite(sqlite: Sqlite, tables: readonly SeedTable[]): void {
  for (const t of tables) {
    const insert = sqlite.prepare(
      `INSERT INTO ${t.table} (${t.columns.map(([c]) => quoted(c)).join(', ')})
       VALUES (${t.columns.map(() => '?').join(', ')})`,
    );
    const write = sqlite.transaction((rows: unknown[][]) => {
      for (const row of rows) insert.run(row);
    });
    let batch: unknown[][] = [];
    for (const row of t.rows()) {
      batch.push(row);
      if (batch.length === SQLITE_ROWS_PER_TRANSACTION) {
        write(batch);
        batch = [];
      }
    }
    if (batch.length > 0) write(batch);
  }
  // What the mirror does after each sync (src/sqlite/mirror.ts refreshPlannerStats): planner statistics.
  sqlite.pragma('analysis_limit = 1000');
  sqlite.pragma('optimize = 0x10002');
}

export async function loadPostgres(pool: pg.Pool, tables: readonly SeedTable[]): Promise<void> {
  for (const t of tables) {
    const statement = `INSERT INTO ${t.table} (${t.columns.map(([c]) => quoted(c)).join(', ')})
       SELECT * FROM unnest(${t.columns.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ')})`;
    const flush = async (rows: unknown[][]) =>
      pool.query(
        statement,
        t.columns.map((_, i) => rows.map((r) => r[i] ?? null)),
      );
    let batch: unknown[][] = [];
    for (const row of t.rows()) {
      batch.push(row);
      if (batch.length === PG_ROWS_PER_STATEMENT) {
        await flush(batch);
        batch = [];
      }
    }
    if (batch.length > 0) await flush(batch);
  }
  await pool.query('ANALYZE');
}
