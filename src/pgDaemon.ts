import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Config } from './config.js';
import { type AppContext, type Component, createPgAppContext } from './context.js';
import { ChangeSignal } from './db/changeSignal.js';
import { openPostgres, type PgDatabase } from './db/pg.js';
import { listenForChanges } from './db/pgChangeSignal.js';
import { pgApplicationName } from './db/pgConfig.js';
import { errorMessage } from './errors.js';
import { instanceName } from './health/identity.js';
import type { Logger } from './log.js';
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
 * Connections a replica may open: the API's reads, webhooks, the dispatcher's claims and settles,
 * the deliveries, and each running sync's lock plus its batches. The LISTEN and the liveness
 * session take their own outside the pool's bound only for liveness (a pg.Client of its own).
 */
const POOL_MAX = 20;

/** A lease owner that names the host and pid, for `pg_stat_activity` and status, and is unique. */
export function replicaOwner(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

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
    onIdleError: (err) =>
      log.warn(
        { event: 'db.connection.lost', error: errorMessage(err) },
        'an idle PostgreSQL connection failed; the next query opens a new one',
      ),
  });
  const ctx = createPgAppContext(config, log);
  const replica: PgReplica = {
    database,
    owner: replicaOwner(),
    signal: new ChangeSignal(),
    subscribers: subscribersFromConfig(config),
  };
  log.info({ event: 'db.opened', database: database.label, owner: replica.owner }, 'PostgreSQL store open');
  return { ctx, replica, close: () => database.close() };
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
 * The replica's components in start order, wired as defaultComponents (daemon.ts) wires SQLite's:
 * the API's enqueue and retry wake the dispatcher, and so does any replica's commit to the feed
 * (a row queued through another replica's API is claimed here without waiting for the poll).
 */
export async function pgDaemonComponents(ctx: AppContext, replica: PgReplica): Promise<Component[]> {
  const [
    { createApiComponent, routeRegistrars },
    { createWebhookComponent },
    { createDispatcherComponent },
    { createMirrorComponent },
    { pgMirrorReads },
    { pgOutbox },
    { pgHealthReads },
    { PgInboxStore },
    { PgOperationsStore },
    { pgBackend },
    { loadPgPauseRecord },
    { createSubscriberComponent },
    { PgDeliveriesStore, pgDeliveriesAccess },
  ] = await Promise.all([
    import('./api/server.js'),
    import('./inbox/listener.js'),
    import('./outbox/dispatcher.js'),
    import('./mirror/scheduler.js'),
    import('./api/pgMirrorQueries.js'),
    import('./outbox/pgAccess.js'),
    import('./health/pgSnapshot.js'),
    import('./inbox/pgStore.js'),
    import('./operations/pgStore.js'),
    import('./mirror/pg/pgBackend.js'),
    import('./outbox/pgPause.js'),
    import('./subscribers/dispatcher.js'),
    import('./subscribers/pgStore.js'),
  ]);
  const { pool } = replica.database;
  const { owner, subscribers } = replica;
  const syncs = new SyncRequests();
  const requestSync = syncs.request;
  const dispatcher = createDispatcherComponent(ctx, {
    requestSync,
    owner,
    store: new PgOperationsStore(pool, { leaseOwner: owner, subscribers }),
    sqliteHooks: null,
    pauseRecord: await loadPgPauseRecord(pool, ctx.log),
  });
  replica.signal.listen(() => dispatcher.wake());
  return [
    createFeedListenerComponent(ctx, replica),
    createApiComponent(
      ctx,
      routeRegistrars({
        wakeDispatcher: dispatcher.wake,
        requestSync,
        mirrorReads: pgMirrorReads(pool),
        outbox: pgOutbox(ctx, pool, { leaseOwner: owner, subscribers }),
        healthReads: pgHealthReads(pool),
        deliveries: pgDeliveriesAccess(pool),
      }),
    ),
    createWebhookComponent(ctx, { requestSync, store: new PgInboxStore(pool, { subscribers }) }),
    dispatcher,
    createSubscriberComponent(ctx, { store: new PgDeliveriesStore(pool), owner, wakeOn: replica.signal }),
    createMirrorComponent(ctx, { syncRequests: syncs, backend: pgBackend(pool) }),
  ];
}
