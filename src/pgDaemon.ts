import { mirrorReads } from './api/mirrorQueries.js';
import { createApiComponent, routeRegistrars } from './api/server.js';
import { isoAt } from './clock.js';
import type { Config } from './config.js';
import { type AppContext, type Component, createPgAppContext } from './context.js';
import { ChangeSignal } from './db/changeSignal.js';
import { openPostgres, type PgDatabase } from './db/pg.js';
import type { PgAvailability } from './db/pgAvailability.js';
import { listenForChanges } from './db/pgChangeSignal.js';
import { pgApplicationName } from './db/pgConfig.js';
import { errorMessage } from './errors.js';
import { feedReads } from './feed/reads.js';
import { instanceName } from './health/identity.js';
import { pgHealthReads, pgReadiness } from './health/postgresHealth.js';
import { ScriptInboxStore } from './inbox/inboxStore.js';
import { createWebhookComponent } from './inbox/listener.js';
import { newLeaseOwner } from './leaseOwner.js';
import type { Logger } from './log.js';
import { interruptOrphanedRuns, pgBackend } from './mirror/postgres.js';
import { createMirrorComponent } from './mirror/scheduler.js';
import { type ReplicaPresence, startReplicaPresence } from './operations/pgPresence.js';
import { PgOperationsStore } from './operations/pgStore.js';
import { createDispatcherComponent } from './outbox/dispatcher.js';
import { pgOutbox } from './outbox/pgAccess.js';
import { pgOutboxHooks } from './outbox/pgHooks.js';
import { postgresScriptStore } from './store/postgresScripts.js';
import { deliveriesAccess } from './subscribers/access.js';
import { ScriptDeliveriesStore } from './subscribers/deliveriesStore.js';
import { createSubscriberComponent } from './subscribers/dispatcher.js';
import { deliveriesSink } from './subscribers/enqueue.js';
import { deliveriesHousekeeping } from './subscribers/housekeeping.js';
import { deliveriesPrune } from './subscribers/prune.js';
import { type Subscriber, subscribersFromConfig } from './subscribers/subscribers.js';
import { SyncRequests } from './syncRequests.js';

/**
 * The daemon on PostgreSQL (`database.url`): the same components as on SQLite, each given its
 * PostgreSQL store, so any number of processes can run on one database. What makes several replicas
 * safe lives in the stores (claims with SKIP LOCKED, run locks, the feed's single-writer lock);
 * what a replica adds here is its identity (one lease owner for its outbox claims, its deliveries'
 * claims and its liveness lock) and the one LISTEN that wakes its feed readers and dispatchers when
 * any replica commits.
 *
 *   presence (liveness lock, heartbeat, dead-replica sweep)
 *   feed-listener (LISTEN vcu_sync_changes -> the change signal)
 *   api, webhook-listener, dispatcher, subscriber-dispatcher, mirror (as on SQLite)
 */

/** What a replica's components share on PostgreSQL. */
export interface PgReplica {
  database: PgDatabase;
  /** This process's lease owner: unique per process, the key of its liveness lock. */
  owner: string;
  /** Announced whenever any replica commits to the feed (fed by LISTEN/NOTIFY). */
  signal: ChangeSignal;
  subscribers: readonly Subscriber[];
}

/**
 * Connections a replica's pool may open: the API's reads, webhooks, the dispatcher's claims and
 * settles, the deliveries, the LISTEN, and each running sync's lock plus its batches. The liveness
 * session is a client of its own, outside the pool (the pool could close or lend it).
 */
const POOL_MAX = 20;

/**
 * Connections the pool keeps open while idle: when other clients take every connection slot of the
 * server (`max_connections`), this replica goes on with these (claims, settles, API reads and
 * webhooks) instead of finding no slot for its next query. pg-pool counts the LISTEN's connection
 * (checked out for good) among them: 4 for the work, 1 for the LISTEN. The liveness session is a
 * client of its own; neither it nor the LISTEN is ever given up to make room.
 */
const POOL_MIN = 5;

/**
 * Opens the pool (migrating first: replicas starting together migrate one after another under an
 * advisory lock) and builds the context; nothing is written to a SQLite file.
 */
export async function openPgDaemonContext(
  config: Config,
  url: string,
  log: Logger,
): Promise<{ ctx: AppContext; replica: PgReplica; close(): Promise<void> }> {
  const database = await openPostgres(url, {
    applicationName: pgApplicationName(instanceName(config)),
    max: POOL_MAX,
    min: POOL_MIN,
    onConnectionLost: (err) =>
      log.debug(
        { event: 'db.connection.lost', error: errorMessage(err) },
        'a PostgreSQL connection failed; the next query opens a new one',
      ),
  });
  const ctx = createPgAppContext(config, log);
  reportAvailability(database.availability, ctx);
  const replica: PgReplica = {
    database,
    owner: newLeaseOwner(),
    signal: new ChangeSignal(),
    subscribers: subscribersFromConfig(config),
  };
  log.info({ event: 'db.opened', database: database.label, owner: replica.owner }, 'PostgreSQL store open');
  return { ctx, replica, close: () => database.close() };
}

/**
 * Says once when the database goes away and once when it is back (with how long it was away), and
 * keeps the `vcu_sync_database_up` gauge in step: the pool, the LISTEN and the liveness session
 * feed the tracker at every connection attempt, but an outage is one warning, not one per query.
 */
export function reportAvailability(
  availability: PgAvailability,
  ctx: Pick<AppContext, 'log' | 'metrics'>,
): void {
  ctx.metrics.databaseUp.set(availability.reachable() ? 1 : 0);
  availability.onChange((change) => {
    if (change.kind === 'unreachable') {
      ctx.metrics.databaseUp.set(0);
      ctx.log.warn(
        { event: 'db.unreachable', reason: change.reason },
        `PostgreSQL cannot be reached (${change.reason}): the API and webhooks answer 503, sending waits; retrying with backoff`,
      );
      return;
    }
    ctx.metrics.databaseUp.set(1);
    ctx.log.info(
      { event: 'db.reachable', outageMs: change.downMs, failedAttempts: change.failures },
      `PostgreSQL is reachable again after ${Math.round(change.downMs / 1000)} s; resuming`,
    );
  });
}

/**
 * The LISTEN on the feed's channel as a component: started before the API so no commit made after
 * the API answers goes unheard. A lost connection is logged and re-made by the listener itself.
 */
export function createFeedListenerComponent(ctx: Pick<AppContext, 'log'>, replica: PgReplica): Component {
  let listener: ReturnType<typeof listenForChanges> | undefined;
  return {
    name: 'feed-listener',
    async start() {
      listener = listenForChanges({
        pool: replica.database.pool,
        signal: replica.signal,
        onError: (err) =>
          ctx.log.warn(
            { event: 'feed.listen_lost', error: errorMessage(err) },
            'the LISTEN connection failed; reconnecting (waiting readers are woken once it is back)',
          ),
      });
      await listener.ready();
    },
    async stop() {
      await listener?.stop();
      listener = undefined;
    },
  };
}

/**
 * The replica's presence as a component: started first, so its liveness lock is held before the
 * first claim (and dead replicas' claims are back before this one claims), and stopped last, after
 * the dispatchers handed their own claims back. What a dead replica held comes back through
 * `releaseOwner`: its operations and its subscriber deliveries; then `wake` runs.
 */
function createPresenceComponent(
  ctx: Pick<AppContext, 'config' | 'clock' | 'log'>,
  replica: PgReplica,
  stores: { operations: PgOperationsStore; deliveries: ScriptDeliveriesStore },
  wake: () => void,
): Component & { alive(): boolean } {
  let presence: ReplicaPresence | undefined;
  return {
    name: 'presence',
    alive: () => presence?.alive() ?? false,
    async start() {
      presence = await startReplicaPresence({
        pool: replica.database.pool,
        replica: {
          owner: replica.owner,
          name: instanceName(ctx.config),
          holds: REPLICA_RUNS,
          now: isoAt(ctx.clock.now()),
        },
        log: ctx.log,
        releaseOwner: async (owner, nowIso) =>
          (await stores.operations.releaseOwner(owner, nowIso)).length +
          (await stores.deliveries.releaseOwner(owner, nowIso)),
        settleOrphans: (nowIso) => interruptOrphanedRuns(replica.database.pool, ctx.log, nowIso),
        onReleased: wake,
        availability: replica.database.availability,
      });
    },
    async stop() {
      await presence?.stop();
      presence = undefined;
    },
  };
}

/** What a replica runs, as its `replicas` row says: everything the daemon does. */
const REPLICA_RUNS = 'api,webhooks,outbox,deliveries,mirror';

/**
 * The replica's components in start order, wired as defaultComponents (daemon.ts) wires SQLite's:
 * the API's enqueue and retry wake the dispatcher, and so does any replica's commit to the feed
 * (a row queued through another replica's API is claimed here without waiting for the poll).
 */
export function pgDaemonComponents(ctx: AppContext, replica: PgReplica): Component[] {
  const { pool } = replica.database;
  const { owner, subscribers, signal } = replica;
  const syncs = new SyncRequests();
  const requestSync = syncs.request;
  // Every state change, whichever store makes it, writes the subscribers' deliveries in its transaction.
  const onStateChange = deliveriesSink(subscribers);
  const operations = new PgOperationsStore(pool, { leaseOwner: owner, onStateChange });
  const scripts = postgresScriptStore(pool);
  const deliveries = new ScriptDeliveriesStore(scripts);
  // Claims only while this replica holds its liveness lock: without it the others presume it dead
  // and may hand its claims back (the presence starts first and is called only once started).
  const mayClaim = () => presence.alive();
  const dispatcher = createDispatcherComponent(ctx, {
    requestSync,
    owner,
    store: operations,
    hooks: pgOutboxHooks(pool, { onStateChange }),
    // The hourly scrub also prunes old deliveries.
    housekeeping: deliveriesHousekeeping(ctx.config, ctx.log, deliveriesPrune(scripts)),
    mayClaim,
  });
  const subscriberDispatcher = createSubscriberComponent(ctx, {
    store: deliveries,
    owner,
    wakeOn: signal,
    mayClaim,
  });
  signal.listen(() => dispatcher.wake());
  // Back after an outage: what waited on a backoff goes now (claims, owed settles, deliveries).
  replica.database.availability.onChange((change) => {
    if (change.kind !== 'reachable') return;
    dispatcher.dispatcher.retryOwedNow();
    subscriberDispatcher.dispatcher.wake();
  });
  const presence = createPresenceComponent(ctx, replica, { operations, deliveries }, () => {
    dispatcher.wake();
    subscriberDispatcher.dispatcher.wake();
  });
  return [
    presence,
    createFeedListenerComponent(ctx, replica),
    createApiComponent(
      ctx,
      routeRegistrars({
        wakeDispatcher: dispatcher.wake,
        requestSync,
        mirrorReads: mirrorReads(postgresScriptStore(pool)),
        outbox: pgOutbox(ctx, pool, { leaseOwner: owner, onStateChange }),
        healthReads: pgHealthReads(pool, replica.database.availability),
        deliveries: deliveriesAccess(scripts),
        feed: feedReads(scripts, signal),
      }),
      { readiness: pgReadiness(pool) },
    ),
    createWebhookComponent(ctx, {
      requestSync,
      store: new ScriptInboxStore(postgresScriptStore(pool), { onStateChange }),
    }),
    dispatcher,
    subscriberDispatcher,
    createMirrorComponent(ctx, { syncRequests: syncs, backend: pgBackend(pool) }),
  ];
}
