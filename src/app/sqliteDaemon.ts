import { mirrorReads } from '../api/mirrorQueries.js';
import type { ApiOptions, ApiSeams } from '../api/server.js';
import { isoAt } from '../common/clock.js';
import { errorMessage } from '../common/errors.js';
import { newLeaseOwner } from '../common/leaseOwner.js';
import type { Logger } from '../common/log.js';
import type { Config } from '../config/config.js';
import { instanceName, VERSION } from '../health/identity.js';
import { SyncCoordinator } from '../mirror/coordinator.js';
import { claimAheadRows } from '../outbox/claimAhead.js';
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
import { deliveriesPrune } from '../subscribers/prune.js';
import { releaseDeliveries } from '../subscribers/queries.js';
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
 * Takes ownership of the file before opening it (a refused start touches nothing), opens it and
 * checks its integrity; its liveness hands the dead previous owner's claims back as it starts.
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
  observeCommitWaits(ctx.database.sqlite, 'main', ctx.metrics.databaseWait);
  // The integrity check comes first: nothing is written to a damaged file, not even the hand-back.
  // A small file is checked right here; a large one in a worker while the daemon serves.
  void prepareDaemonDatabase(ctx.database, {
    busyTimeoutMs: config.database.daemon_busy_timeout_ms,
    checkBeforeServingMaxBytes: config.database.startup_check_max_mib * 1024 * 1024,
    log,
  }).catch((err: unknown) => warn(log, 'database.check.failed', err));
  const close = () => {
    ctx.database.close();
    ownership.release();
  };
  return { ctx, stores: daemonSeams(ctx, close) };
}

/** Logs what failed where failing is not worth stopping the daemon for. */
function warn(log: Logger, event: string, err: unknown): void {
  log.warn({ event, error: errorMessage(err) }, errorMessage(err));
}

/** Refs named in the hand-back's log line; the count covers the rest. */
const REFS_LOGGED = 20;

/**
 * Every claim on the file back to its queue, its attempt not counted: one process per file, so a
 * claim found at start belongs to one that died. Delivery resumes now instead of when the dead
 * process's leases run out (with every later row of the same units waiting behind them). The
 * operator may have received those requests: delivery is at-least-once, the same ref sent again.
 */
export async function handBackDeadOwners(
  ctx: Pick<SqliteContext, 'database' | 'clock' | 'log'>,
): Promise<void> {
  const { sqlite } = ctx.database;
  const nowIso = isoAt(ctx.clock.now());
  const rows = await new SqliteOperationsStore(sqlite).releaseAll(nowIso);
  if (rows.length > 0) {
    const refs = rows.slice(0, REFS_LOGGED).map((r) => r.ref);
    const message = `handed ${rows.length} operation(s) claimed by a process that died back to the queue`;
    ctx.log.warn({ event: 'outbox.released_at_start', rows: rows.length, refs }, message);
  }
  const deliveries = driveSqlite(sqlite, releaseDeliveries(undefined, nowIso));
  if (deliveries > 0) {
    const message = `handed ${deliveries} subscriber deliveries claimed by a process that died back to pending`;
    ctx.log.warn({ event: 'subscribers.released_at_start', rows: deliveries }, message);
  }
}

/**
 * The file's owner's liveness (./liveness.ts): alive from its start for the process's life (the
 * locks taken as the file opened are the kernel's: they cannot be lost). Its start hands back every
 * claim on the file, its previous owner having died holding them; `ready` writes the daemon's
 * record (for `vcu-sync status` in another process: uptime), its stop clears it.
 */
function sqliteLiveness(ctx: SqliteContext): Liveness {
  const { config, log } = ctx;
  const { sqlite } = ctx.database;
  let alive = false;
  return {
    name: 'liveness',
    // One process per file: its claims need no name beyond this process.
    owner: newLeaseOwner(),
    alive: () => alive,
    onHandBack: () => {},
    async start() {
      alive = true;
      if (databaseFaultsFor(sqlite).facts().corruption) return;
      try {
        await handBackDeadOwners(ctx);
      } catch (err) {
        // A file that takes no writes (read-only, full) must not stop the daemon from starting and
        // saying so in status; the dead claims then go back when their leases run out.
        warn(log, 'outbox.release_at_start_failed', err);
      }
    },
    ready() {
      const record = {
        startedAt: ctx.startedAt,
        pid: process.pid,
        instance: instanceName(config),
        version: VERSION,
      };
      try {
        writeDaemonRecord(sqlite, record);
      } catch (err) {
        warn(log, 'daemon.record_not_written', err);
      }
    },
    async stop() {
      alive = false;
      try {
        clearDaemonRecord(sqlite);
      } catch (err) {
        warn(log, 'daemon.record_not_cleared', err);
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
    // A busy dispatcher's groups start every few ms (sqlite/dispatcherBatches.ts): its slots take
    // rows claimed ahead meanwhile. Its thread claims as many (app/dispatcherWorker.ts).
    claimAhead: claimAheadRows(config),
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
