import type { Statement } from 'better-sqlite3';
import {
  isFeedStep,
  type Outcome,
  type Row,
  type Script,
  type ScriptStore,
  type TransactionOptions,
} from '../store/script.js';
import { type Sql, sqliteDialect } from '../store/sql.js';
import { recordChanges } from './changes.js';
import { commitQueueFor } from './commitQueue.js';
import type { Sqlite } from './open.js';
import { perHandle } from './perHandle.js';

/**
 * Scripts (./script.ts) on SQLite: driven synchronously, inside one job of the connection's group
 * commit (sqlite/commitQueue.ts), so they commit with their neighbours in one fsync and never await
 * inside a transaction. Statements are prepared once per handle and text.
 */

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

/**
 * Drives `script` to its end now, on this handle, in whatever transaction the caller holds (a
 * group-commit job, or a `sqlite.transaction`).
 */
export function driveSqlite<T>(sqlite: Sqlite, script: Script<T>): T {
  let step = script.next();
  try {
    while (!step.done) {
      const current = step.value;
      if (isFeedStep(current)) {
        recordChanges(sqlite, current.feed);
        step = script.next({ rows: [], rowCount: current.feed.length });
      } else {
        step = script.next(runSqlite(sqlite, current));
      }
    }
    return step.value;
  } finally {
    // A statement that threw leaves the script suspended: its `finally` blocks run now.
    if (!step.done) script.return(undefined as T);
  }
}

/** The script store of one SQLite handle. */
export function sqliteScriptStore(sqlite: Sqlite): ScriptStore {
  return {
    dialect: sqliteDialect,
    transaction: <T>(script: Script<T>, options?: TransactionOptions) =>
      commitQueueFor(sqlite).submit(() => driveSqlite(sqlite, script), options),
    read: <R extends object = Row>(statement: Sql) =>
      new Promise<R[]>((resolve) => resolve(runSqlite(sqlite, statement).rows as R[])),
  };
}
