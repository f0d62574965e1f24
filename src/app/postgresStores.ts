import type pg from 'pg';
import { mirrorReads } from '../api/mirrorQueries.js';
import { isoAt } from '../common/clock.js';
import { EXIT_CONFIG, errorMessage, UserError } from '../common/errors.js';
import { newLeaseOwner } from '../common/leaseOwner.js';
import type { Logger } from '../common/log.js';
import { noopMetrics } from '../common/metrics.js';
import type { Config } from '../config/config.js';
import { type AppContext, type Component, createAppContext } from '../context.js';
import { ChangeSignal } from '../db/changeSignal.js';
import { feedReads } from '../feed/feedReads.js';
import { instanceName } from '../health/identity.js';
import type { HealthReads } from '../health/snapshot.js';
import { InboxStore } from '../inbox/inboxStore.js';
import { SyncCoordinator } from '../mirror/coordinator.js';
import { claimAheadRows } from '../outbox/claimAhead.js';
import type { PgAvailability } from '../postgres/availability.js';
import { listenForChanges } from '../postgres/changeListener.js';
import { pgApplicationName } from '../postgres/connection.js';
import { pgClassifyFault, pgHealthReads, pgReadiness, pgUnopenedReads } from '../postgres/health.js';
import { interruptOrphanedRuns, pgBackend } from '../postgres/mirror.js';
import {
  appliedMigrations,
  migratePostgres,
  openPostgres,
  type PgDatabase,
  type PgOpenOptions,
} from '../postgres/open.js';
import { PgOperationsStore, pgOutbox, pgOutboxHooks } from '../postgres/operationsStore.js';
import { replicaPresence } from '../postgres/presence.js';
import { postgresScriptStore } from '../postgres/scripts.js';
import { DeliveriesStore } from '../subscribers/deliveriesStore.js';
import { deliveriesSink } from '../subscribers/deliverySinks.js';
import { deliveriesPrune } from '../subscribers/prune.js';
import { configuredSchemaChangesSink, subscribersFromConfig } from '../subscribers/subscribers.js';
import {
  type CommandStoreOptions,
  type DaemonStores,
  noShapeTablesMessage,
  type Opened,
  type ShapeReads,
  type Stores,
} from './stores.js';

/**
 * The PostgreSQL adapter's factory (`database.url`): any number of processes on one database. What
 * makes several replicas safe lives in the stores (claims with SKIP LOCKED, run locks, the feed's
 * single-writer lock); what a replica adds is its identity (one lease owner for its outbox claims,
 * its deliveries' claims and its liveness lock), its presence and the one LISTEN that wakes its feed
 * readers and dispatchers when any replica commits. Loaded only on that path, so SQLite never loads pg.
 */

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
 * (checked out for good) among them: 4 for the work, 1 for the LISTEN.
 */
const POOL_MIN = 5;

/** A command's connections: one holds a sync run's lock, the others carry its batches. */
const COMMAND_POOL_MAX = 4;

/** What a replica runs, as its `replicas` row says: everything the daemon does. */
const REPLICA_RUNS = 'api,webhooks,outbox,deliveries,mirror';

/**
 * Opens the pool; a lost connection is noted at `level`: a debug line in the daemon (its availability
 * tracker says an outage once), a warning for a command, which has no other voice.
 */
function open(
  config: Config,
  url: string,
  log: Logger,
  options: PgOpenOptions,
  level: 'debug' | 'warn',
): Promise<PgDatabase> {
  return openPostgres(url, {
    applicationName: pgApplicationName(instanceName(config)),
    onConnectionLost: (err) =>
      log[level](
        { event: 'db.connection.lost', error: errorMessage(err) },
        'a PostgreSQL connection failed; the next query opens a new one',
      ),
    ...options,
  });
}

/** The seams a command uses (a command never claims: it queues and steers). */
function commandSeams(ctx: AppContext, database: PgDatabase): Stores {
  const { pool } = database;
  return {
    sharedByProcesses: true,
    // A cancel or retry is pushed to the subscribers, whichever process makes it.
    outbox: pgOutbox(ctx, pool, {
      onStateChange: deliveriesSink(subscribersFromConfig(ctx.config)),
    }),
    deliveriesAccess: new DeliveriesStore(postgresScriptStore(pool)),
    // The URL holds a password: the hint names where it is set, never its value.
    inspectHint: () => 'psql "$VCU_SYNC_DATABASE_URL" -c "SELECT state, count(*) FROM outbox GROUP BY state"',
    mirrorBackend: () => pgBackend(pool, configuredSchemaChangesSink(ctx.config)),
    reconciliation: postgresScriptStore(pool),
    close: () => database.close(),
  };
}

/**
 * A command's context and stores, the schema brought up to date first as on SQLite. As on SQLite
 * only a creating command may start from nothing: the others on a database the daemon has never run
 * on say so (exit 1) instead of creating the tables.
 */
export async function openPostgresCommand(
  config: Config,
  url: string,
  log: Logger,
  options: CommandStoreOptions = {},
): Promise<Opened<Stores>> {
  const database = await open(config, url, log, { max: COMMAND_POOL_MAX, migrate: false }, 'warn');
  try {
    if (!options.create && !(await hasTables(database.pool))) {
      throw new UserError(
        `database ${database.label} has no vcu-sync tables: the daemon has never run with this configuration (check database.url / VCU_SYNC_DATABASE_URL)`,
      );
    }
    await migratePostgres(database.pool, database.label);
  } catch (err) {
    await database.close();
    throw err;
  }
  const ctx = createAppContext(config, log, { metrics: options.metrics ?? noopMetrics() });
  return { ctx, stores: commandSeams(ctx, database) };
}

async function hasTables(pool: pg.Pool, table = 'outbox'): Promise<boolean> {
  const { rows } = await pool.query<{ found: boolean }>(`SELECT to_regclass($1) IS NOT NULL AS found`, [
    `public.${table}`,
  ]);
  return rows[0]?.found === true;
}

/**
 * `vcu-sync schema`'s reads: one connection, no migration (it only reads), on a database holding the
 * learned shape's tables.
 */
export async function postgresShapeReads(config: Config, url: string, log: Logger): Promise<ShapeReads> {
  const database = await open(config, url, log, { max: 1, migrate: false }, 'warn');
  try {
    if (!(await hasTables(database.pool, 'schema_fields')))
      throw new UserError(noShapeTablesMessage(database.label));
  } catch (err) {
    await database.close();
    throw err;
  }
  const scripts = postgresScriptStore(database.pool);
  return { read: (statement) => scripts.read(statement), close: () => database.close() };
}

/**
 * `vcu-sync status`'s reads: no migration (status only reads), one connection. A server that
 * cannot be reached reads as a critical `database-unreachable` problem; one that refuses the
 * connection for another reason (a wrong password) as `database-unreadable`.
 */
export async function postgresStatusReads(
  config: Config,
  url: string,
): Promise<{ reads: HealthReads; close(): Promise<void> }> {
  try {
    const database = await openPostgres(url, {
      applicationName: pgApplicationName(instanceName(config)),
      migrate: false,
      max: 1,
    });
    return { reads: pgHealthReads(database.pool), close: () => database.close() };
  } catch (err) {
    // A configuration it cannot read stays a configuration error (exit 78), not a status.
    if (err instanceof UserError && err.exitCode === EXIT_CONFIG) throw err;
    return { reads: pgUnopenedReads(err, url), close: async () => {} };
  }
}

/**
 * Opens the replica's pool (migrating first: replicas starting together migrate one after another
 * under an advisory lock) and builds its context and stores; nothing is written to a SQLite file.
 */
export async function openPostgresDaemon(
  config: Config,
  url: string,
  log: Logger,
): Promise<Opened<DaemonStores>> {
  const database = await open(config, url, log, { max: POOL_MAX, min: POOL_MIN }, 'debug');
  const ctx = createAppContext(config, log);
  reportAvailability(database.availability, ctx);
  const owner = newLeaseOwner();
  log.info({ event: 'db.opened', database: database.label, owner }, 'PostgreSQL store open');
  return { ctx, stores: daemonSeams(ctx, database, owner) };
}

/** The replica's seams and PostgreSQL's extras: its liveness, the feed's LISTEN, availability. */
function daemonSeams(ctx: AppContext, database: PgDatabase, owner: string): DaemonStores {
  const { pool, availability } = database;
  const scripts = postgresScriptStore(pool);
  // Announced whenever any replica commits to the feed (fed by LISTEN/NOTIFY).
  const signal = new ChangeSignal();
  // Every state change, whichever store makes it, writes the subscribers' deliveries in its transaction.
  const onStateChange = deliveriesSink(subscribersFromConfig(ctx.config));
  const operations = new PgOperationsStore(pool, { onStateChange });
  const deliveries = new DeliveriesStore(scripts);
  return {
    ...commandSeams(ctx, database),
    // Its presence (./liveness.ts); what a dead replica held comes back: its operations and its deliveries.
    liveness: replicaPresence({
      pool,
      replica: { owner, name: instanceName(ctx.config), holds: REPLICA_RUNS, now: isoAt(ctx.clock.now()) },
      log: ctx.log,
      releaseOwner: async (dead, nowIso) =>
        (await operations.releaseOwner(dead, nowIso)).length + (await deliveries.releaseOwner(dead, nowIso)),
      settleOrphans: (nowIso) => interruptOrphanedRuns(pool, ctx.log, nowIso),
      availability,
    }),
    operations,
    outboxHooks: pgOutboxHooks(pool, { onStateChange, quietAccepted: operations.quietAccepted }),
    inbox: new InboxStore(scripts, { onStateChange }),
    deliveries,
    pruneDeliveries: deliveriesPrune(scripts),
    api: {
      outbox: pgOutbox(ctx, pool, { onStateChange }),
      mirrorReads: mirrorReads(scripts),
      healthReads: pgHealthReads(pool, availability),
      deliveries: new DeliveriesStore(scripts),
      feed: feedReads(scripts, signal),
      reconciliation: scripts,
      readiness: pgReadiness(pool),
      unavailable: pgClassifyFault,
    },
    othersCommitted: signal,
    claimAhead: claimAheadRows(ctx.config),
    onReachable: (fn) =>
      availability.onChange((change) => {
        if (change.kind === 'reachable') fn();
      }),
    components: () => [feedListenerComponent(ctx, pool, signal)],
    dispatcherThread: () => undefined,
    // Each run finds dead runs itself as it takes its lock.
    mirrorRuns: () =>
      new SyncCoordinator(ctx, () => pgBackend(pool, configuredSchemaChangesSink(ctx.config))),
  };
}

/**
 * Says once when the database goes away and once when it is back (with how long it was away), and
 * keeps the `vcu_sync_database_up` gauge in step: an outage is one warning, not one per query.
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
function feedListenerComponent(ctx: Pick<AppContext, 'log'>, pool: pg.Pool, signal: ChangeSignal): Component {
  let listener: ReturnType<typeof listenForChanges> | undefined;
  return {
    name: 'feed-listener',
    async start() {
      listener = listenForChanges({
        pool,
        signal,
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

/** `db migrate` on PostgreSQL: migrations applied as the pool opens; says how many are in. */
export async function postgresMigrate(config: Config, url: string): Promise<string> {
  const database = await openPostgres(url, {
    applicationName: pgApplicationName(instanceName(config)),
    max: 1,
  });
  try {
    const applied = await appliedMigrations(database.pool);
    return `postgresql ${database.label}: schema up to date (${applied} migrations applied)`;
  } finally {
    await database.close();
  }
}

/** Exit code of `db backup` on PostgreSQL: the command does not apply there (sysexits EX_USAGE). */
export const EXIT_BACKUP_POSTGRES = 64;

/** `db backup` on PostgreSQL: refused, naming the tool that does it. */
export async function postgresBackup(): Promise<string> {
  throw new UserError(
    'database.url is set: back up PostgreSQL with pg_dump (e.g. pg_dump --format=custom --file=FILE DBNAME); db backup copies a SQLite file only',
    EXIT_BACKUP_POSTGRES,
  );
}
