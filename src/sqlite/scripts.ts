import type { Statement } from 'better-sqlite3';
import type { Outcome, Row } from '../store/script.js';
import type { Dialect, Sql } from '../store/sql.js';
import type { Sqlite } from './open.js';
import { perHandle } from './perHandle.js';

/**
 * Statements (store/sql.ts) on SQLite: SQLite's spelling of them, and the runner the group commit
 * drives scripts with (./commitQueue.ts). Statements are prepared once per handle and text.
 */

/** SQLite's spelling: `?` placeholders, no booleans, `MAX`/`MIN` of two; one process owns the file. */
export const sqliteDialect: Dialect = {
  capabilities: { sharedByProcesses: false },
  placeholder: () => '?',
  bind: (value) => (typeof value === 'boolean' ? (value ? 1 : 0) : value),
  greatest: (a, b) => `MAX(${a}, ${b})`,
  least: (a, b) => `MIN(${a}, ${b})`,
  // One writer commits at a time: ids are handed out in commit order already, passes one by one.
  transactionLock: () => '',
  indexCatalog: "(SELECT name, tbl_name AS tbl FROM sqlite_master WHERE type = 'index')",
  indexedBy: (index) => ` INDEXED BY "${index}"`,
};

/** Most prepared statements kept per handle: texts vary with list lengths (`IN (?, ?)`). */
const PREPARED_CAP = 500;

const preparedOf = perHandle(() => new Map<string, Statement<unknown[], Row>>());

function prepared(sqlite: Sqlite, text: string): Statement<unknown[], Row> {
  const cache = preparedOf(sqlite);
  let statement = cache.get(text);
  if (statement === undefined) {
    statement = sqlite.prepare(text) as Statement<unknown[], Row>;
    if (cache.size >= PREPARED_CAP) cache.delete(cache.keys().next().value as string);
    cache.set(text, statement);
  }
  return statement;
}

/** Runs one statement now, on this handle. */
export function runSqlite(sqlite: Sqlite, statement: Sql): Outcome {
  const { text, values } = statement.render(sqliteDialect);
  // A statement wholly `whenShared(...)` is PostgreSQL's alone: nothing to run here.
  if (text.trim() === '') return { rows: [], rowCount: 0 };
  const st = prepared(sqlite, text);
  if (st.reader) {
    const rows = st.all(values);
    return { rows, rowCount: rows.length };
  }
  return { rows: [], rowCount: st.run(values).changes };
}
