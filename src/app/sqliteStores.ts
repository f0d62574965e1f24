import { existsSync } from 'node:fs';
import { sqliteUnavailableAnswer } from '../api/databaseUnavailable.js';
import { mirrorReads } from '../api/mirrorQueries.js';
import type { ApiOptions, ApiSeams } from '../api/server.js';
import type { Config } from '../config.js';
import { type AppContext, closeAppContext, createAppContext } from '../context.js';
import { backupDatabase } from '../db/backup.js';
import { changeSignalFor } from '../db/changeSignal.js';
import { observeCommitWaits } from '../db/commitQueue.js';
import { databaseFaultsFor } from '../db/faults.js';
import { prepareDaemonDatabase } from '../db/integrity.js';
import { openDatabase } from '../db/open.js';
import { acquireOwnership } from '../db/ownership.js';
import { errorMessage, UserError } from '../errors.js';
import { feedHead } from '../feed/queries.js';
import { sqliteFeedReads } from '../feed/reads.js';
import { clearDaemonRecord, writeDaemonRecord } from '../health/daemonRecord.js';
import { instanceName, VERSION } from '../health/identity.js';
import type { HealthReads } from '../health/snapshot.js';
import { sqliteHealthReads, sqliteReadiness } from '../health/sqliteHealth.js';
import { sqliteInboxStore } from '../inbox/inboxStore.js';
import { newLeaseOwner } from '../leaseOwner.js';
import type { Logger } from '../log.js';
import { sqliteBackend } from '../mirror/backend.js';
import { createSyncThread } from '../mirror/syncThread.js';
import { SqliteOperationsStore } from '../operations/sqliteStore.js';
import { sqliteOutbox } from '../outbox/access.js';
import { createDispatcherThreadComponent } from '../outbox/dispatcherThread.js';
import { sqliteOutboxHooks } from '../outbox/hooks.js';
import { releaseDeadClaims } from '../outbox/startup.js';
import { sqliteScriptStore } from '../store/sqliteScripts.js';
import { deliveriesAccess } from '../subscribers/access.js';
import { ScriptDeliveriesStore } from '../subscribers/deliveriesStore.js';
import { releaseDeadDeliveries } from '../subscribers/dispatcher.js';
import { deliveriesPrune } from '../subscribers/prune.js';
import { configuredDeliveriesSink } from '../subscribers/subscribers.js';
import type { CommandStoreOptions, DaemonStores, Opened, Stores } from './stores.js';

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

/** The seams a command uses, over the context's file. */
function commandSeams(ctx: AppContext, close: () => void): Stores {
  const { sqlite } = ctx.database;
  return {
    sharedByProcesses: false,
    // A command's enqueue is a commit of its own, waiting `busy_timeout_ms` for the daemon's lock.
    outbox: sqliteOutbox(ctx, { grouped: false }),
    deliveriesAccess: deliveriesAccess(sqliteScriptStore(sqlite)),
    mirrorBackend: () => sqliteBackend(ctx),
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
  const ctx = createAppContext(config, log, {
    metrics: options.metrics,
    // A cancel or retry from the CLI is pushed to the subscribers as the daemon's would be.
    onStateChange: configuredDeliveriesSink(config),
  });
  return { ctx, stores: commandSeams(ctx, () => closeAppContext(ctx)) };
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
 * Takes ownership of the file before opening it (a refused start touches nothing), opens it, and
 * hands the claims of the dead previous owner back to the queue, so delivery resumes at once.
 * Throws a UserError naming the database and the running daemon's pid when another owns it.
 */
export async function openSqliteDaemon(config: Config, log: Logger): Promise<Opened<DaemonStores>> {
  const ownership = await acquireOwnership(config.database.path);
  let ctx: AppContext;
  try {
    ctx = createAppContext(config, log, { onStateChange: configuredDeliveriesSink(config) });
  } catch (err) {
    ownership.release();
    throw err;
  }
  const close = () => {
    closeAppContext(ctx);
    ownership.release();
  };
  try {
    prepareOwnedFile(ctx);
  } catch (err) {
    close();
    throw err;
  }
  return { ctx, stores: daemonSeams(ctx, close) };
}

/** The owner's start on its file: integrity check, then the dead owner's claims handed back. */
function prepareOwnedFile(ctx: AppContext): void {
  const { config, log } = ctx;
  observeCommitWaits(ctx.database.sqlite, 'main', ctx.metrics.databaseWait);
  // The integrity check comes first: nothing is written to a damaged file, not even the hand-back.
  // A small file is checked right here; a large one in a worker while the daemon serves.
  void prepareDaemonDatabase(ctx.database, {
    busyTimeoutMs: config.database.daemon_busy_timeout_ms,
    checkBeforeServingMaxBytes: config.database.startup_check_max_mib * 1024 * 1024,
    log,
  }).catch((err: unknown) =>
    log.warn({ event: 'database.check.failed', error: errorMessage(err) }, errorMessage(err)),
  );
  if (databaseFaultsFor(ctx.database.sqlite).facts().corruption) return;
  try {
    releaseDeadClaims(ctx);
    releaseDeadDeliveries(ctx);
  } catch (err) {
    // A file that takes no writes (read-only, full) must not stop the daemon from starting and
    // saying so in status; the dead claims then go back when their leases run out.
    log.warn({ event: 'outbox.release_at_start_failed', error: errorMessage(err) }, errorMessage(err));
  }
}

/** The API's seams over the context's file (the daemon's; a test of the API alone takes them too). */
export function sqliteApi(ctx: AppContext): ApiSeams & ApiOptions {
  const { sqlite } = ctx.database;
  return {
    // Grouped: at hundreds of requests a second, one fsync per event-loop turn, not one per request.
    outbox: sqliteOutbox(ctx),
    mirrorReads: mirrorReads(sqliteScriptStore(sqlite)),
    healthReads: sqliteHealthReads(sqlite),
    deliveries: deliveriesAccess(sqliteScriptStore(sqlite)),
    feed: sqliteFeedReads(sqlite),
    // Read per probe from the context: a context reopened meanwhile is read anew.
    readiness: (listeners) =>
      sqliteReadiness(ctx.database.sqlite, ctx.config.database.busy_timeout_ms)(listeners),
    unavailable: sqliteUnavailableAnswer(() => ctx.database.sqlite),
  };
}

/** The daemon's seams over the file it owns, and SQLite's extras (threads, the daemon's record). */
function daemonSeams(ctx: AppContext, close: () => void): DaemonStores {
  const { config, log } = ctx;
  const { sqlite } = ctx.database;
  return {
    ...commandSeams(ctx, close),
    api: sqliteApi(ctx),
    // One process per file: its claims need no name beyond this process.
    owner: newLeaseOwner(),
    operations: new SqliteOperationsStore(sqlite),
    outboxHooks: sqliteOutboxHooks(sqlite),
    inbox: sqliteInboxStore(sqlite),
    deliveries: new ScriptDeliveriesStore(sqliteScriptStore(sqlite)),
    pruneDeliveries: deliveriesPrune(sqliteScriptStore(sqlite)),
    // The only writer: its own commits announce themselves.
    othersCommitted: undefined,
    mayClaim: () => true,
    onReachable: () => {},
    components: () => [],
    // In its own thread (outbox.dispatcher_thread) the dispatcher's sends and commits never hold
    // the API's loop; the worker's commits (decisions, failures) land in the feed: wake its readers.
    dispatcherThread: (requestSync) =>
      config.outbox.dispatcher_thread
        ? createDispatcherThreadComponent(ctx, {
            onCommitted: () => changeSignalFor(sqlite).announce(feedHead(sqlite)),
            requestSync,
          })
        : undefined,
    // In its own thread (sync.thread) a sync's pages never hold the API's loop, and its bulk
    // writes give way to the API's commits; on this loop the runs find their dead runs at start.
    mirrorRuns: () => (config.sync.thread ? { runner: createSyncThread(ctx) } : {}),
    ready() {
      // For `vcu-sync status` in another process (uptime); not worth failing a start over.
      try {
        writeDaemonRecord(sqlite, {
          startedAt: ctx.startedAt,
          pid: process.pid,
          instance: instanceName(config),
          version: VERSION,
        });
      } catch (err) {
        log.warn({ event: 'daemon.record_not_written', error: errorMessage(err) }, errorMessage(err));
      }
    },
    stopped() {
      try {
        clearDaemonRecord(sqlite);
      } catch (err) {
        log.warn({ event: 'daemon.record_not_cleared', error: errorMessage(err) }, errorMessage(err));
      }
    },
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
