import path from 'node:path';
import { ChangeSignal } from '../../src/db/changeSignal.js';
import type { MirrorBackend } from '../../src/mirror/backend.js';
import type { OperationsStore } from '../../src/operations/storeSeam.js';
import { listenForChanges } from '../../src/postgres/changeListener.js';
import { pgBackend } from '../../src/postgres/mirror.js';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { PgOperationsStore } from '../../src/postgres/operationsStore.js';
import { postgresScriptStore } from '../../src/postgres/scripts.js';
import { changeSignalFor } from '../../src/sqlite/changes.js';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { openDatabase } from '../../src/sqlite/open.js';
import { SqliteOperationsStore } from '../../src/sqlite/operationsStore.js';
import type { ScriptStore } from '../../src/store/script.js';
import { tempDir } from '../helpers/context.js';

/**
 * What the reconciler runs on, over either store: its seam (a script store), the feed's signal as
 * the daemon hands it (SQLite's handle signal; PostgreSQL's LISTEN), and the writers whose commits
 * touch issuances (the operations store's transitions, the mirror's batches), with a reader of
 * rows in the same forms on both.
 */
export interface ReconcileUnderTest {
  kind: 'sqlite' | 'postgres';
  store: ScriptStore;
  changes: ChangeSignal;
  ops: OperationsStore;
  backend: MirrorBackend;
  /** Rows of `sql` (PostgreSQL's `$n` placeholders, SQLite's `?` made of them). */
  query<R extends object = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
  close(): Promise<void>;
}

/** A fresh SQLite file. */
export function sqliteReconcile(): ReconcileUnderTest {
  const { dir, cleanup } = tempDir();
  const database = openDatabase(path.join(dir, 'reconcile.db'));
  const { sqlite } = database;
  return {
    kind: 'sqlite',
    store: commitQueueFor(sqlite),
    changes: changeSignalFor(sqlite),
    ops: new SqliteOperationsStore(sqlite),
    backend: sqliteBackend(sqlite),
    query: async <R extends object>(sql: string, params: unknown[] = []) => {
      const statement = sqlite.prepare(sql.replace(/\$\d+/g, '?'));
      // A statement that answers no rows (DDL, a write) is run rather than read.
      if (statement.reader) return statement.all(...params) as R[];
      statement.run(...params);
      return [];
    },
    close: async () => {
      database.close();
      cleanup();
    },
  };
}

/**
 * A PostgreSQL database at `url` (migrated as it opens), with the feed's LISTEN as a replica has it;
 * `onListenError` is told when the LISTEN connection fails (a restart).
 */
export async function postgresReconcile(
  url: string,
  onListenError: (err: Error) => void = () => {},
): Promise<ReconcileUnderTest & { db: PgDatabase }> {
  const db = await openPostgres(url);
  const changes = new ChangeSignal();
  const listener = listenForChanges({
    pool: db.pool,
    signal: changes,
    onError: onListenError,
    reconnect: { baseMs: 20, capMs: 200 },
  });
  await listener.ready();
  return {
    kind: 'postgres',
    db,
    store: postgresScriptStore(db.pool),
    changes,
    ops: new PgOperationsStore(db.pool),
    backend: pgBackend(db.pool),
    query: async <R extends object>(sql: string, params: unknown[] = []) =>
      (await db.pool.query(sql, params)).rows as R[],
    close: async () => {
      await listener.stop();
      await db.close();
    },
  };
}
