import { createApiComponent, routeRegistrars } from '../api/server.js';
import { finishedWithin } from '../common/clock.js';
import { errorMessage } from '../common/errors.js';
import { SyncRequests } from '../common/syncRequests.js';
import type { AppContext, Component } from '../context.js';
import type { ListenersUp } from '../http/httpListener.js';
import { createWebhookComponent } from '../inbox/listener.js';
import { createMirrorComponent } from '../mirror/scheduler.js';
import { createDispatcherComponent } from '../outbox/dispatcher.js';
import { createReconcileComponent } from '../reconcile/reconciler.js';
import { createSubscriberComponent } from '../subscribers/dispatcher.js';
import { deliveriesHousekeeping } from '../subscribers/housekeeping.js';
import { configuredFindingsSink } from '../subscribers/subscribers.js';
import type { DaemonStores } from './stores.js';

/**
 * The daemon, one wiring for both stores: the store's liveness first (./liveness.ts), its own
 * components next (PostgreSQL's feed listener; SQLite has none), then
 *
 *   api, webhook-listener, dispatcher, subscriber-dispatcher, mirror, reconciler
 *
 * (the reconciler unless `reconcile.enabled = false`)
 * each given its seam of the store. What differs per store is asked of the port, never named here.
 */

/** Options of {@link startDaemon}. */
export interface DaemonOptions {
  /**
   * Longest the whole graceful stop may take before the process gives up on stragglers, ms; below
   * the unit's TimeoutStopSec (45 s) so systemd never has to SIGKILL (default: 30000).
   */
  stopTimeoutMs?: number;
}

/** A running daemon. */
export interface Daemon {
  /** Stops every component in reverse start order; resolves when all stopped or the bound passed. */
  stop(reason: string): Promise<void>;
  /** Resolves once stop() has finished. */
  readonly stopped: Promise<void>;
}

/**
 * The daemon's parts in start order: the store's own, listeners (so status answers), then the loops.
 * How the loops reach each other is wired here: the mirror serves sync requests; the API, the
 * webhook listener and the dispatcher ask; the API's enqueue and retry wake the dispatcher, and so
 * does another process's commit (a row queued through another replica's API is claimed at once).
 */
export function daemonComponents(ctx: AppContext, stores: DaemonStores): Component[] {
  const syncs = new SyncRequests();
  const requestSync = syncs.request;
  const { liveness } = stores;
  const { owner } = liveness;
  const mayClaim = () => liveness.alive();
  const thread = stores.dispatcherThread(requestSync);
  const onLoop = thread
    ? undefined
    : createDispatcherComponent(ctx, {
        requestSync,
        owner,
        store: stores.operations,
        hooks: stores.outboxHooks,
        // The hourly scrub also prunes old deliveries (in a thread, app/dispatcherWorker.ts does).
        housekeeping: deliveriesHousekeeping(ctx.config, ctx.log, stores.pruneDeliveries),
        mayClaim,
        claimAhead: stores.claimAhead,
      });
  const dispatcher = (thread ?? onLoop) as Component & { wake: () => void };
  const subscribers = createSubscriberComponent(ctx, {
    store: stores.deliveries,
    owner,
    wakeOn: stores.othersCommitted,
    mayClaim,
  });
  // Re-evaluates what the feed says was touched, from the mirror's and the dispatcher's commits alike.
  const reconciler = ctx.config.reconcile.enabled
    ? createReconcileComponent(ctx, {
        store: stores.reconciliation,
        changes: stores.api.feed.signal,
        sink: configuredFindingsSink(ctx.config),
      })
    : undefined;
  stores.othersCommitted?.listen(() => dispatcher.wake());
  // Back after an outage: what waited on a backoff goes now (claims, owed settles, deliveries, passes).
  stores.onReachable(() => {
    onLoop?.dispatcher.retryOwedNow();
    subscribers.dispatcher.wake();
    reconciler?.wake();
  });
  // Claims of a dead process are back: the dispatcher and the subscriber lanes take them now.
  liveness.onHandBack(() => {
    dispatcher.wake();
    subscribers.dispatcher.wake();
  });
  const routes = routeRegistrars({ ...stores.api, wakeDispatcher: dispatcher.wake, requestSync });
  // What /readyz reads: both listeners' addresses, each set by its own component while it listens.
  const listeners: ListenersUp = new Map();
  return [
    liveness,
    ...stores.components(),
    createApiComponent(ctx, routes, { ...stores.api, listeners }),
    createWebhookComponent(ctx, { requestSync, store: stores.inbox, listeners }),
    dispatcher,
    subscribers,
    createMirrorComponent(ctx, { syncRequests: syncs, runner: stores.mirrorRuns() }),
    ...(reconciler ? [reconciler] : []),
  ];
}

/**
 * Starts the components in order. If one fails to start, those already started are stopped
 * again and the error is thrown (a port in use, say), so the process exits instead of half-running.
 */
export async function startDaemon(
  ctx: AppContext,
  stores: DaemonStores,
  options: DaemonOptions = {},
): Promise<Daemon> {
  const components = daemonComponents(ctx, stores);
  const started: Component[] = [];
  const stopAll = async (reason: string) => {
    ctx.log.info({ event: 'daemon.stopping', reason }, `stopping (${reason})`);
    // One deadline for all: components stop one after another, each gets what is left of it.
    const deadline = Date.now() + (options.stopTimeoutMs ?? 30_000);
    for (const component of [...started].reverse()) {
      const bound = Math.max(0, deadline - Date.now());
      try {
        const stopping = component.stop();
        if (await finishedWithin(stopping, bound)) await stopping;
        else {
          ctx.log.warn(
            { event: 'daemon.stop.timeout', component: component.name },
            `${component.name} did not stop in ${bound} ms`,
          );
        }
      } catch (err) {
        ctx.log.error({ event: 'daemon.stop.failed', component: component.name, err }, errorMessage(err));
      }
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
  stores.liveness.ready();
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
