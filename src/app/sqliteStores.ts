import { existsSync } from 'node:fs';
import { UserError } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import type { Config } from '../config/config.js';
import { type AppContext, type CreateContextOptions, createAppContext } from '../context.js';
import type { HealthReads } from '../health/snapshot.js';
import type { StateChangeSink } from '../operations/effects.js';
import { refuseSqliteUnderPostgres } from '../postgres/connection.js';
import { backupDatabase } from '../sqlite/backup.js';
import { useStateChangeSink } from '../sqlite/changes.js';
import { commitQueueFor } from '../sqlite/commitQueue.js';
import { sqliteHealthReads } from '../sqlite/health.js';
import { sqliteBackend } from '../sqlite/mirror.js';
import { type OpenDatabase, openDatabase } from '../sqlite/open.js';
import { sqliteOutbox } from '../sqlite/operationsStore.js';
import { runSqlite } from '../sqlite/scripts.js';
import type { Sql } from '../store/sql.js';
import { DeliveriesStore } from '../subscribers/deliveriesStore.js';
import { configuredDeliveriesSink, configuredSchemaChangesSink } from '../subscribers/subscribers.js';
import {
  type CommandStoreOptions,
  noShapeTablesMessage,
  type Opened,
  type ShapeReads,
  type Stores,
} from './stores.js';

/**
 * The SQLite adapter's factory: one daemon per file, which owns it for the process's life (the
 * ownership lock), keeps its WAL bounded, checks its integrity at start and may run the dispatcher
 * and the syncs in threads of their own over connections to the same file.
 */

/** What a command does when the file is not there (`status`, `outbox`, `db backup`). */
export function missingDatabaseMessage(file: string): string {
  return `database ${file} does not exist: the daemon has never run with this configuration`;
}

/**
 * Only `run`, `sync`, `enqueue` and `db migrate` may create the database; a command that reads
 * calls this first, so a mistyped path is an error instead of a new empty database.
 */
export function requireDatabase(config: Config): void {
  if (!existsSync(config.database.path)) {
    throw new UserError(
      `${missingDatabaseMessage(config.database.path)} (check database.path / VCU_SYNC_DB)`,
    );
  }
}

/** A context and the SQLite file it works on (the handle stays with the factory and its seams). */
export type SqliteContext = AppContext & { database: OpenDatabase };

/** Options of {@link openSqliteContext}. */
export interface SqliteContextOptions extends CreateContextOptions {
  /** Apply migrations when opening the file (default: true). */
  migrate?: boolean;
  /**
   * What every state change committed through this file writes besides the feed, in its
   * transaction (operations/effects.ts): the root hands the subscribers' deliveries, so that a
   * cancel from the CLI is pushed as the daemon's would be (default: nothing).
   */
  onStateChange?: StateChangeSink;
}

/** Opens the file at `database.path` (created and migrated unless told not to) and its context. */
export function openSqliteContext(
  config: Config,
  log: Logger,
  options: SqliteContextOptions = {},
): SqliteContext {
  refuseSqliteUnderPostgres(config);
  const database = openDatabase(config.database.path, {
    migrate: options.migrate ?? true,
    synchronous: config.database.synchronous,
    busyTimeoutMs: config.database.busy_timeout_ms,
  });
  useStateChangeSink(database.sqlite, options.onStateChange);
  return createAppContext(config, log, options, { database });
}

/** The seams a command uses, over the context's file. */
export function commandSeams(ctx: SqliteContext, close: () => void): Stores {
  const { sqlite } = ctx.database;
  return {
    sharedByProcesses: false,
    // A command's enqueue is a commit of its own, waiting `busy_timeout_ms` for the daemon's lock.
    outbox: sqliteOutbox(ctx, sqlite, { grouped: false }),
    deliveriesAccess: new DeliveriesStore(commitQueueFor(sqlite)),
    inspectHint: () => sqliteHint(ctx.config.database.path),
    mirrorBackend: () => sqliteBackend(sqlite, undefined, configuredSchemaChangesSink(ctx.config)),
    reconciliation: commitQueueFor(sqlite),
    close: async () => close(),
  };
}

/** A one-shot command's context and stores; the file must exist unless `create`. */
export function openSqliteCommand(
  config: Config,
  log: Logger,
  options: CommandStoreOptions = {},
): Opened<Stores> {
  if (!options.create) requireDatabase(config);
  const ctx = openSqliteContext(config, log, {
    metrics: options.metrics,
    // A cancel or retry from the CLI is pushed to the subscribers as the daemon's would be.
    onStateChange: configuredDeliveriesSink(config),
  });
  return { ctx, stores: commandSeams(ctx, () => ctx.database.close()) };
}

/** `vcu-sync status`'s reads: the file opened read-only, never migrated. */
export function sqliteStatusReads(
  config: Config,
): { reads: HealthReads; close(): Promise<void> } | { missing: string } {
  if (!existsSync(config.database.path)) return { missing: missingDatabaseMessage(config.database.path) };
  const database = openDatabase(config.database.path, { readonly: true, migrate: false });
  return { reads: sqliteHealthReads(database.sqlite), close: async () => database.close() };
}

/**
 * `vcu-sync schema`'s reads: the file opened read-only, never migrated; it must exist (a mistyped
 * path is an error, not a new file) and hold the learned shape's tables.
 */
export function sqliteShapeReads(config: Config): ShapeReads {
  requireDatabase(config);
  const database = openDatabase(config.database.path, { readonly: true, migrate: false });
  const { sqlite } = database;
  const found = sqlite.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_fields'`);
  if (found.get() === undefined) {
    database.close();
    throw new UserError(noShapeTablesMessage(config.database.path));
  }
  return {
    read: async <R extends object>(statement: Sql) => runSqlite(sqlite, statement).rows as R[],
    close: async () => database.close(),
  };
}

/** `db migrate` on the file: migrations applied as it opens; says how many are in. */
export function sqliteMigrate(config: Config): string {
  const database = openDatabase(config.database.path, { synchronous: config.database.synchronous });
  try {
    const applied = database.sqlite
      .prepare('SELECT count(*) FROM __drizzle_migrations')
      .pluck()
      .get() as number;
    return `${config.database.path}: schema up to date (${applied} migrations applied)`;
  } finally {
    database.close();
  }
}

/** `db backup FILE`: an online backup of the file, safe while the daemon writes. */
export async function sqliteBackup(config: Config, file: string): Promise<string> {
  requireDatabase(config);
  const database = openDatabase(config.database.path, { migrate: false });
  try {
    const result = await backupDatabase(database.sqlite, file);
    const rows = Object.values(result.tables).reduce((a, b) => a + b, 0);
    return `backup written to ${result.file}: ${result.pages} pages, ${rows} rows in ${Object.keys(result.tables).length} tables`;
  } finally {
    database.sqlite.close();
  }
}

/**
 * The query to look into the file, read-only: a `sqlite3` shell left open mid-transaction would hold
 * the daemon's write lock (README "database-locked"); the path quoted for the shell when it needs it.
 */
function sqliteHint(file: string): string {
  const quoted = /^[\w./-]+$/.test(file) ? file : `'${file.replaceAll("'", "'\\''")}'`;
  return `sqlite3 -readonly ${quoted} "SELECT state, count(*) FROM outbox GROUP BY state"`;
}
