import type pg from 'pg';
import { isoAt, realSchedule, type Schedule } from '../common/clock.js';
import { errorMessage } from '../common/errors.js';
import type { StoreIdentity } from '../health/identity.js';
import { EXPECTED_LISTENERS, type ReadinessFacts, type ReadinessReader } from '../health/readiness.js';
import type { ClassifyFault } from '../health/refusal.js';
import {
  type DatabaseFacts,
  type HealthReads,
  type HealthSnapshot,
  NO_FAULTS,
  type ReplicaFacts,
  type RunningSync,
} from '../health/snapshot.js';
import { healthReads, PAUSE_ROW, type PauseRow, type SnapshotEdge } from '../health/snapshotReads.js';
import { pauseOf } from '../outbox/pause.js';
import { migrationsNewerThan } from '../sqlite/migrations.js';
import { all, type Script, type ScriptStore } from '../store/script.js';
import { raw, type Sql, sql } from '../store/sql.js';
import { livenessLock, syncRunLock } from './advisoryLocks.js';
import { errorLine, type PgAvailability, unreachableReason } from './availability.js';
import { labelOf, pgConnection } from './connection.js';
import { pgUnavailableReason } from './faults.js';
import { pgReadAdvice, UNREACHABLE_ACTION } from './healthAdvice.js';
import { inPgTransaction, PG_MIGRATIONS_FOLDER } from './open.js';
import { drivePostgres, postgresScriptStore } from './scripts.js';

/**
 * PostgreSQL's part of health (the statements are ./snapshotReads.ts's): the snapshot in one
 * REPEATABLE READ, READ ONLY transaction, so every figure is of one moment, with the replicas and
 * their locks; a server that cannot be reached reported as such; /readyz's facts within a bound.
 * Write failures, locks and corruption are SQLite's file-level faults: the server has its own log.
 */

/** The identity's `database` of a server at `label` (host:port/database, never credentials). */
const storeAt = (label: string): StoreIdentity => ({ kind: 'postgres', location: label });

/**
 * How a failed read of the PostgreSQL snapshot is reported: a server that cannot be reached is
 * `unreachable` (since when `availability` says, when given), anything else a read error.
 */
function pgReadFailed(err: unknown, availability?: PgAvailability): DatabaseFacts {
  const reason = unreachableReason(err);
  // pg's messages name host:port at most, never the URL's password.
  if (reason === null) return { ...NO_FAULTS, readError: errorMessage(err), readAction: pgReadAdvice(err) };
  const outage = availability?.outage();
  const since = outage ? isoAt(outage.since) : null;
  return { ...NO_FAULTS, unreachable: { reason, since, action: UNREACHABLE_ACTION } };
}

/** The API's reading of a failed request: a server away, restarting, out of connections, a lost race. */
export const pgClassifyFault: ClassifyFault = (err) => {
  const reason = pgUnavailableReason(err);
  if (reason === null) return null;
  // A server that is not there is logged once per outage (db.unreachable), not once per request.
  return {
    kind: 'postgres',
    message: `${reason}; retry later`,
    retryAfterSeconds: 2,
    quiet: unreachableReason(err) !== null,
  };
};

/** A session advisory lock on a 64-bit key (SQL) is granted in this database (PostgreSQL's). */
const lockHeld = (key: string) =>
  raw(`EXISTS (
  SELECT 1 FROM pg_locks l
   WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
     AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
     AND ((l.classid::int8 << 32) | l.objid::int8) = ${key})`);

/** Every registered replica, alive or not, with its claims (by lease owner, byte order). */
const REPLICAS: Sql = sql`SELECT r.lease_owner AS owner, r.name, r.holds AS runs,
            r.started_at AS "startedAt", r.last_heartbeat_at AS "lastHeartbeatAt",
            ${lockHeld(livenessLock('r.lease_owner'))} AS alive,
            (SELECT count(*) FROM outbox o WHERE o.state = 'sending' AND o.lease_owner = r.lease_owner) AS claimed,
            (SELECT count(*) FROM deliveries d WHERE d.state = 'sending' AND d.lease_owner = r.lease_owner)
              AS "claimedDeliveries",
            (SELECT min(o.updated_at) FROM outbox o
              WHERE o.state = 'sending' AND o.lease_owner = r.lease_owner) AS "oldestClaimAt"
       FROM replicas r ORDER BY r.lease_owner COLLATE "C"`;

/** Sync runs still `running`, and whether their resource's run lock is held. */
const RUNNING_SYNCS: Sql = sql`SELECT id, resource, started_at AS "startedAt", pid,
            ${lockHeld(syncRunLock('resource'))} AS "lockHeld"
       FROM sync_runs WHERE status = 'running' ORDER BY id`;

/** What only the replicas' shared store has: its replicas (liveness from `pg_locks`) and the runs they hold. */
function* replicaFacts(): Script<Pick<HealthSnapshot, 'replicas' | 'runningSyncs'>> {
  const replicas = yield* all<ReplicaFacts>(REPLICAS);
  const runningSyncs = yield* all<RunningSync>(RUNNING_SYNCS);
  return { replicas, runningSyncs };
}

function pgSnapshotEdge(pool: pg.Pool, availability?: PgAvailability): SnapshotEdge {
  return {
    store: storeAt(labelOf(pool.options)),
    atOneMoment: (script) =>
      inPgTransaction(pool, async (client) => {
        await client.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
        return drivePostgres(client, script);
      }),
    databaseFacts: () => ({ ...NO_FAULTS }),
    readFailed: (err) => pgReadFailed(err, availability),
    storeFacts: replicaFacts,
  };
}

/** The health reads of a PostgreSQL database; `availability` dates an outage (default: undated). */
export function pgHealthReads(pool: pg.Pool, availability?: PgAvailability): HealthReads {
  return healthReads(postgresScriptStore(pool), pgSnapshotEdge(pool, availability));
}

/**
 * The health of the database at `url` that could not be opened: openPostgres's error names
 * host:port/database only; what it wraps says whether the server was there.
 */
export function pgUnopenedReads(err: unknown, url: string): HealthReads {
  const cause = err instanceof Error && err.cause !== undefined ? err.cause : err;
  let label: string;
  try {
    label = pgConnection(url).label;
  } catch {
    // The URL was checked at load; an unreadable one names nothing rather than leak a part.
    label = 'database.url';
  }
  return {
    store: storeAt(label),
    snapshot: () => Promise.reject(err),
    daemonStartedAt: async () => null,
    readFailed: () =>
      unreachableReason(cause) === null
        ? pgReadFailed(err)
        : {
            ...NO_FAULTS,
            unreachable: { reason: errorMessage(err), since: null, action: UNREACHABLE_ACTION },
          },
    series: () => Promise.reject(err),
  };
}

/**
 * /readyz's facts on PostgreSQL: the database answers a trivial query within a bound, takes writes
 * (not a read-only standby), has the schema this build ships, and sending is not paused
 * (`daemon_state`, shared by the replicas). The judge is readiness.ts's, the same as SQLite's.
 *
 * A server that hangs (a network cut with no reset, a stuck proxy) must not hang /readyz, whose
 * caller is a load balancer with a timeout of its own: after `boundMs` it answers with "no answer
 * within ...". The read is left to finish in the background and at most one is in flight: probes
 * arriving meanwhile wait on that one rather than piling connections onto a server that is not
 * answering.
 */

/** Options of {@link pgReadiness}. */
export interface PgReadinessOptions {
  /** Longest wait for the database's answer, ms (default: 2000). */
  boundMs?: number;
  /** Timers (default: real ones; tests end the bound by hand). */
  schedule?: Schedule;
}

/** What the database said, or why it said nothing. */
type ReadinessOfDatabase = Pick<
  ReadinessFacts,
  'databaseUnanswered' | 'databaseUnreachable' | 'writeBlocked' | 'pendingMigrations' | 'sendingPaused'
>;

const UNKNOWN = { writeBlocked: null, pendingMigrations: 0, sendingPaused: null } as const;

async function readDatabaseFacts(store: ScriptStore): Promise<ReadinessOfDatabase> {
  try {
    const [state] = await store.read<{ read_only: boolean; migrated: boolean }>(
      sql`SELECT current_setting('transaction_read_only') = 'on' AS read_only,
                 to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS migrated`,
    );
    const { read_only: readOnly, migrated } = state ?? { read_only: false, migrated: false };
    let newest = Number.NEGATIVE_INFINITY;
    let pause: PauseRow | undefined;
    // An empty database has neither the migrations' table nor `daemon_state`.
    if (migrated) {
      const [schema] = await store.read<{ newest: number | null }>(
        sql`SELECT max(created_at) AS newest FROM drizzle.__drizzle_migrations`,
      );
      if (schema?.newest != null) newest = schema.newest;
      [pause] = await store.read<PauseRow>(PAUSE_ROW);
    }
    return {
      databaseUnanswered: null,
      writeBlocked: readOnly ? 'the server is read-only (a standby, or default_transaction_read_only)' : null,
      pendingMigrations: migrationsNewerThan(newest, PG_MIGRATIONS_FOLDER),
      sendingPaused: pauseOf(pause)?.reason ?? null,
    };
  } catch (err) {
    // A server that is not there at all is its own reason (`database-unreachable`), as status says.
    const unreachable = unreachableReason(err);
    if (unreachable !== null)
      return { databaseUnanswered: null, databaseUnreachable: unreachable, ...UNKNOWN };
    return { databaseUnanswered: errorLine(err), ...UNKNOWN };
  }
}

/** PostgreSQL's facts reader for `createApiComponent(ctx, registrars, { readiness })`. */
export function pgReadiness(pool: pg.Pool, options: PgReadinessOptions = {}): ReadinessReader {
  const boundMs = options.boundMs ?? 2_000;
  const schedule = options.schedule ?? realSchedule;
  const store = postgresScriptStore(pool);
  let inFlight: Promise<ReadinessOfDatabase> | null = null;
  const unanswered: ReadinessOfDatabase = {
    databaseUnanswered: `no answer within ${boundMs / 1000} s`,
    ...UNKNOWN,
  };
  return async (listeners) => {
    if (inFlight === null) {
      const read = readDatabaseFacts(store);
      inFlight = read;
      void read.finally(() => {
        if (inFlight === read) inFlight = null;
      });
    }
    let cancel: () => void = () => {};
    const bound = new Promise<ReadinessOfDatabase>((resolve) => {
      cancel = schedule(boundMs, () => resolve(unanswered));
    });
    try {
      const database = await Promise.race([inFlight, bound]);
      return { ...database, listeners: new Set(listeners.keys()), expectedListeners: EXPECTED_LISTENERS };
    } finally {
      cancel();
    }
  };
}
