import { mirrorReads } from '../api/mirrorQueries.js';
import type { ApiOptions, ApiSeams } from '../api/server.js';
import type { Config } from '../config.js';
import { errorMessage } from '../errors.js';
import { instanceName, VERSION } from '../health/identity.js';
import { newLeaseOwner } from '../leaseOwner.js';
import type { Logger } from '../log.js';
import { SyncCoordinator } from '../mirror/coordinator.js';
import { releaseDeadClaims } from '../outbox/startup.js';
import { changeSignalFor } from '../sqlite/changes.js';
import { commitQueueFor, driveSqlite, observeCommitWaits } from '../sqlite/commitQueue.js';
import { databaseFaultsFor } from '../sqlite/faults.js';
import { sqliteClassifyFault, sqliteHealthReads, sqliteReadiness } from '../sqlite/health.js';
import { sqliteInboxStore } from '../sqlite/inboxStore.js';
import { prepareDaemonDatabase } from '../sqlite/integrity.js';
import { sqliteBackend } from '../sqlite/mirror.js';
import { SqliteOperationsStore, sqliteOutbox, sqliteOutboxHooks } from '../sqlite/operationsStore.js';
import { acquireOwnership, clearDaemonRecord, writeDaemonRecord } from '../sqlite/ownership.js';
import { createSyncThread } from '../sqlite/syncThread.js';
import { sqliteHostedStore } from '../sqlite/threadStore.js';
import { DeliveriesStore } from '../subscribers/deliveriesStore.js';
import { releaseDeadDeliveries } from '../subscribers/dispatcher.js';
import { deliveriesPrune } from '../subscribers/prune.js';
import { configuredDeliveriesSink, configuredSchemaChangesSink } from '../subscribers/subscribers.js';
import { createDispatcherThreadComponent } from './dispatcherThread.js';
import type { Liveness } from './liveness.js';
import { feedHead, sqliteFeedReads } from './sqliteFeedReads.js';
import { commandSeams, openSqliteContext, type SqliteContext } from './sqliteStores.js';
import type { DaemonStores, Opened } from './stores.js';

/**
 * The SQLite daemon's part of the adapter's factory, loaded only by `run` and `demo` (a command's
 * process never loads the daemon's parts): the file owned for the process's life, its integrity
 * checked at start, the dispatcher and the syncs in threads of their own where configured.
 */

/**
 * Takes ownership of the file before opening it (a refused start touches nothing), opens it, and
 * hands the claims of the dead previous owner back to the queue, so delivery resumes at once.
 * Throws a UserError naming the database and the running daemon's pid when another owns it.
 */
export async function openSqliteDaemon(config: Config, log: Logger): Promise<Opened<DaemonStores>> {
  const ownership = await acquireOwnership(config.database.path);
  let ctx: SqliteContext;
  try {
    ctx = openSqliteContext(config, log, { onStateChange: configuredDeliveriesSink(config) });
  } catch (err) {
    ownership.release();
    throw err;
  }
  const close = () => {
    ctx.database.close();
    ownership.release();
  };
  try {
    await prepareOwnedFile(ctx);
  } catch (err) {
    close();
    throw err;
  }
  return { ctx, stores: daemonSeams(ctx, close) };
}

/** The owner's start on its file: the integrity check (the dead owner's claims come back as its liveness starts). */
async function prepareOwnedFile(ctx: SqliteContext): Promise<void> {
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
}

/**
 * The file's owner's liveness (./liveness.ts): alive from its start for the process's life, since
 * the locks taken at open are the kernel's and cannot be lost. Its start hands back every claim on
 * the file (its previous owner died holding them); ready writes the daemon's record, stop clears it.
 */
function sqliteLiveness(ctx: SqliteContext): Liveness {
  const { config, log } = ctx;
  const { sqlite } = ctx.database;
  let state: 'starting' | 'alive' | 'stopped' = 'starting';
  return {
    name: 'liveness',
    // One process per file: its claims need no name beyond this process.
    owner: newLeaseOwner(),
    alive: () => state === 'alive',
    onHandBack: () => {},
    async start() {
      state = 'alive';
      if (databaseFaultsFor(sqlite).facts().corruption) return;
      try {
        await releaseDeadClaims(new SqliteOperationsStore(sqlite), ctx.clock, log);
        releaseDeadDeliveries((script) => driveSqlite(sqlite, script), ctx);
      } catch (err) {
        // A file that takes no writes (read-only, full) must not stop the daemon from starting and
        // saying so in status; the dead claims then go back when their leases run out.
        log.warn({ event: 'outbox.release_at_start_failed', error: errorMessage(err) }, errorMessage(err));
      }
    },
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
    async stop() {
      state = 'stopped';
      try {
        clearDaemonRecord(sqlite);
      } catch (err) {
        log.warn({ event: 'daemon.record_not_cleared', error: errorMessage(err) }, errorMessage(err));
      }
    },
  };
}

/** The API's seams over the context's file (the daemon's; a test of the API alone takes them too). */
export function sqliteApi(ctx: SqliteContext): ApiSeams & ApiOptions {
  const { sqlite } = ctx.database;
  return {
    // Grouped: at hundreds of requests a second, one fsync per event-loop turn, not one per request.
    outbox: sqliteOutbox(ctx, sqlite, { grouped: true }),
    mirrorReads: mirrorReads(commitQueueFor(sqlite)),
    healthReads: sqliteHealthReads(sqlite),
    deliveries: new DeliveriesStore(commitQueueFor(sqlite)),
    feed: sqliteFeedReads(sqlite),
    reconciliation: commitQueueFor(sqlite),
    // Read per probe from the context: a context reopened meanwhile is read anew.
    readiness: (listeners) =>
      sqliteReadiness(ctx.database.sqlite, ctx.config.database.busy_timeout_ms)(listeners),
    unavailable: sqliteClassifyFault(() => ctx.database.sqlite),
  };
}

/** The daemon's seams over the file it owns, and SQLite's extras (its liveness, threads). */
function daemonSeams(ctx: SqliteContext, close: () => void): DaemonStores {
  const { config } = ctx;
  const { sqlite } = ctx.database;
  return {
    ...commandSeams(ctx, close),
    api: sqliteApi(ctx),
    liveness: sqliteLiveness(ctx),
    operations: new SqliteOperationsStore(sqlite),
    outboxHooks: sqliteOutboxHooks(sqlite),
    inbox: sqliteInboxStore(sqlite),
    deliveries: new DeliveriesStore(commitQueueFor(sqlite)),
    pruneDeliveries: deliveriesPrune(commitQueueFor(sqlite)),
    // The only writer: its own commits announce themselves.
    othersCommitted: undefined,
    onReachable: () => {},
    components: () => [],
    // In its own thread (outbox.dispatcher_thread) the dispatcher's sends and commits never hold
    // the API's loop; the worker's commits (decisions, failures) land in the feed: wake its readers.
    dispatcherThread: (requestSync) =>
      config.outbox.dispatcher_thread
        ? createDispatcherThreadComponent(ctx, {
            store: sqliteHostedStore(sqlite),
            onCommitted: () => changeSignalFor(sqlite).announce(feedHead(sqlite)),
            requestSync,
          })
        : undefined,
    // In its own thread (sync.thread) a sync's pages never hold the API's loop, and its bulk
    // writes give way to the API's commits. Either finds the runs that died with a previous process at start.
    mirrorRuns: () =>
      config.sync.thread
        ? createSyncThread(ctx, sqlite, { onSchemaChange: configuredSchemaChangesSink(config) })
        : new SyncCoordinator(ctx, (stop) =>
            sqliteBackend(sqlite, stop, configuredSchemaChangesSink(config)),
          ),
  };
}
