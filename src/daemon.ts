import { systemClock } from './clock.js';
import type { Config } from './config.js';
import { type AppContext, type Component, closeAppContext, createAppContext } from './context.js';
import { changeSignalFor } from './db/changeSignal.js';
import { observeCommitWaits } from './db/commitQueue.js';
import { databaseFaultsFor } from './db/faults.js';
import { prepareDaemonDatabase } from './db/integrity.js';
import { acquireOwnership } from './db/ownership.js';
import { refuseSqliteUnderPostgres } from './db/pgConfig.js';
import { errorMessage } from './errors.js';
import { feedHead } from './feed/queries.js';
import { clearDaemonRecord, writeDaemonRecord } from './health/daemonRecord.js';
import { instanceName, VERSION } from './health/identity.js';
import type { Logger } from './log.js';
import { releaseDeadClaims } from './outbox/startup.js';
import { sqliteScriptStore } from './store/sqliteScripts.js';
import { releaseDeadDeliveries } from './subscribers/dispatcher.js';
import { deliveriesHousekeeping } from './subscribers/housekeeping.js';
import { deliveriesPrune } from './subscribers/prune.js';
import { configuredDeliveriesSink } from './subscribers/subscribers.js';
import { SyncRequests } from './syncRequests.js';

/** Options of {@link startDaemon}. */
export interface DaemonOptions {
  /** The parts to run, in start order (default: API, webhook listener, dispatcher, subscriber dispatcher, mirror scheduler). */
  components?: Component[];
  /**
   * Longest the whole graceful stop may take before the process gives up on stragglers, ms; below
   * the unit's TimeoutStopSec (45 s) so systemd never has to SIGKILL (default: 30000).
   */
  stopTimeoutMs?: number;
  /**
   * Write the daemon's record (start, pid) to SQLite's `daemon_state` for `vcu-sync status`; on
   * PostgreSQL each replica's `replicas` row says it instead (default: true).
   */
  daemonRecord?: boolean;
}

/** A running daemon. */
export interface Daemon {
  /** Stops every component in reverse start order; resolves when all stopped or the bound passed. */
  stop(reason: string): Promise<void>;
  /** Resolves once stop() has finished. */
  readonly stopped: Promise<void>;
}

/** A daemon's context over the database it owns. */
export interface OwnedContext {
  ctx: AppContext;
  /** Closes the database (checkpointing the WAL), then gives up ownership. */
  close(): void;
}

/**
 * Takes ownership of the SQLite file before opening it (a refused start touches nothing), opens
 * it, and hands the claims of the dead previous owner back to the queue, so delivery resumes at
 * once. Throws a UserError naming the database and the running daemon's pid when another owns it.
 */
export async function openDaemonContext(config: Config, log: Logger): Promise<OwnedContext> {
  refuseSqliteUnderPostgres(config);
  const ownership = await acquireOwnership(config.database.path);
  let ctx: AppContext;
  try {
    ctx = createAppContext(config, log, { onStateChange: configuredDeliveriesSink(config) });
  } catch (err) {
    ownership.release();
    throw err;
  }
  observeCommitWaits(ctx.database.sqlite, 'main', ctx.metrics.databaseWait);
  try {
    // The integrity check comes first: nothing is written to a damaged file, not even the hand-back.
    // A small file is checked right here; a large one in a worker while the daemon serves.
    void prepareDaemonDatabase(ctx.database, {
      busyTimeoutMs: config.database.daemon_busy_timeout_ms,
      checkBeforeServingMaxBytes: config.database.startup_check_max_mib * 1024 * 1024,
      log,
    }).catch((err: unknown) =>
      log.warn({ event: 'database.check.failed', error: errorMessage(err) }, errorMessage(err)),
    );
    if (!databaseFaultsFor(ctx.database.sqlite).facts().corruption) {
      try {
        releaseDeadClaims(ctx);
        releaseDeadDeliveries(ctx);
      } catch (err) {
        // A file that takes no writes (read-only, full) must not stop the daemon from starting and
        // saying so in status; the dead claims then go back when their leases run out.
        log.warn({ event: 'outbox.release_at_start_failed', error: errorMessage(err) }, errorMessage(err));
      }
    }
  } catch (err) {
    closeAppContext(ctx);
    ownership.release();
    throw err;
  }
  return {
    ctx,
    close() {
      closeAppContext(ctx);
      ownership.release();
    },
  };
}

/**
 * The daemon's parts in start order: listeners first (so status answers), then the loops. How the
 * loops reach each other is wired here: the API's enqueue and retry wake the dispatcher.
 */
export async function defaultComponents(ctx: AppContext): Promise<Component[]> {
  const [
    { createApiComponent, routeRegistrars },
    { createWebhookComponent },
    { createDispatcherComponent },
    { createDispatcherThreadComponent },
    { createMirrorComponent },
    { createSubscriberComponent },
    { createSyncThread },
  ] = await Promise.all([
    import('./api/server.js'),
    import('./inbox/listener.js'),
    import('./outbox/dispatcher.js'),
    import('./outbox/dispatcherThread.js'),
    import('./mirror/scheduler.js'),
    import('./subscribers/dispatcher.js'),
    import('./mirror/syncThread.js'),
  ]);
  // The loops are linked here, where one can see it: the mirror serves sync requests; the API, the
  // webhook listener and the dispatcher ask; the API wakes the dispatcher.
  const syncs = new SyncRequests();
  const requestSync = syncs.request;
  // In its own thread (outbox.dispatcher_thread) the dispatcher's sends and commits never hold the
  // API's loop. A context with an injected clock (tests) keeps it here: a worker reads the system clock.
  const dispatcher =
    ctx.config.outbox.dispatcher_thread && ctx.clock === systemClock
      ? createDispatcherThreadComponent(ctx, {
          // The worker's commits (decisions, failures) land in the feed: wake the waiting readers.
          onCommitted: () => changeSignalFor(ctx.database.sqlite).announce(feedHead(ctx.database.sqlite)),
          requestSync,
        })
      : createDispatcherComponent(ctx, {
          requestSync,
          // The hourly scrub also prunes old deliveries (in the thread, app/dispatcherWorker.ts does).
          housekeeping: deliveriesHousekeeping(
            ctx.config,
            ctx.log,
            deliveriesPrune(sqliteScriptStore(ctx.database.sqlite)),
          ),
        });
  // In its own thread (sync.thread) a sync's pages never hold the API's loop, and its bulk writes
  // give way to the API's commits. An injected clock (tests) keeps it here, as for the dispatcher.
  const syncThread = ctx.config.sync.thread && ctx.clock === systemClock ? createSyncThread(ctx) : undefined;
  return [
    createApiComponent(ctx, routeRegistrars({ wakeDispatcher: dispatcher.wake, requestSync })),
    createWebhookComponent(ctx, { requestSync }),
    dispatcher,
    createSubscriberComponent(ctx),
    createMirrorComponent(ctx, { syncRequests: syncs, ...(syncThread ? { runner: syncThread } : {}) }),
  ];
}

/**
 * Starts the components in order. If one fails to start, those already started are stopped
 * again and the error is thrown (a port in use, say), so the process exits instead of half-running.
 */
export async function startDaemon(ctx: AppContext, options: DaemonOptions = {}): Promise<Daemon> {
  const components = options.components ?? (await defaultComponents(ctx));
  const started: Component[] = [];
  const stopAll = async (reason: string) => {
    ctx.log.info({ event: 'daemon.stopping', reason }, `stopping (${reason})`);
    // One deadline for all: components stop one after another, each gets what is left of it.
    const deadline = Date.now() + (options.stopTimeoutMs ?? 30_000);
    for (const component of [...started].reverse()) {
      let timer: NodeJS.Timeout | undefined;
      const bound = Math.max(0, deadline - Date.now());
      const timeout = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), bound);
      });
      try {
        const outcome = await Promise.race([component.stop().then(() => 'stopped' as const), timeout]);
        if (outcome === 'timeout') {
          ctx.log.warn(
            { event: 'daemon.stop.timeout', component: component.name },
            `${component.name} did not stop in ${bound} ms`,
          );
        }
      } catch (err) {
        ctx.log.error({ event: 'daemon.stop.failed', component: component.name, err }, errorMessage(err));
      } finally {
        clearTimeout(timer);
      }
    }
    try {
      if (options.daemonRecord ?? true) clearDaemonRecord(ctx.database.sqlite);
    } catch (err) {
      ctx.log.warn({ event: 'daemon.record_not_cleared', error: errorMessage(err) }, errorMessage(err));
    }
    ctx.log.info({ event: 'daemon.stopped' }, 'stopped');
  };
  for (const component of components) {
    try {
      await component.start();
      started.push(component);
    } catch (err) {
      await stopAll(`${component.name} failed to start`);
      throw err;
    }
  }
  try {
    // For `vcu-sync status` in another process (uptime); not worth failing a start over.
    if (options.daemonRecord ?? true)
      writeDaemonRecord(ctx.database.sqlite, {
        startedAt: ctx.startedAt,
        pid: process.pid,
        instance: instanceName(ctx.config),
        version: VERSION,
      });
  } catch (err) {
    ctx.log.warn({ event: 'daemon.record_not_written', error: errorMessage(err) }, errorMessage(err));
  }
  ctx.log.info({ event: 'daemon.ready', components: started.map((c) => c.name) }, 'ready');
  let stopping: Promise<void> | undefined;
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((resolve) => {
    resolveStopped = resolve;
  });
  return {
    stopped,
    stop(reason: string) {
      stopping ??= stopAll(reason).then(resolveStopped);
      return stopping;
    },
  };
}
