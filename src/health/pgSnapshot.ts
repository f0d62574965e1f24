import type pg from 'pg';
import { isoAt } from '../clock.js';
import { type DatabaseFacts, NO_FAULTS } from '../db/faults.js';
import { inPgTransaction } from '../db/pg.js';
import { type PgAvailability, unreachableReason } from '../db/pgAvailability.js';
import { errorMessage } from '../errors.js';
import { iso } from '../operations/pgRows.js';
import { PAUSE_KEY, pauseOf } from '../outbox/pause.js';
import type { SubscriberBacklog } from '../subscribers/reads.js';
import { pgReadAdvice } from './pgAdvice.js';
import { readSeriesPg } from './pgSeries.js';
import {
  type HealthReads,
  type HealthSnapshot,
  learnedPageSize,
  minKnown,
  type ReplicaFacts,
  type ResourceFacts,
  type RunningSync,
  type SnapshotWindow,
  SYNC_RESOURCES,
} from './snapshot.js';

/**
 * The health snapshot read from PostgreSQL: the same facts as SQLite's readSnapshot (./snapshot.ts),
 * in one REPEATABLE READ, READ ONLY transaction so every figure is of one moment, times in SQLite's
 * ISO form, counts as numbers; plus the replicas and the runs they hold. Every statement reads:
 * status never takes a lock a replica could wait on (liveness is read from `pg_locks`).
 */

type Client = pg.PoolClient;

/** A session advisory lock on a 64-bit key (SQL) is granted in this database. */
const LOCK_HELD = (key: string) => `EXISTS (
  SELECT 1 FROM pg_locks l
   WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
     AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
     AND ((l.classid::int8 << 32) | l.objid::int8) = ${key})`;

/** The same keys as pgLiveness.ts (a replica's owner) and mirror/postgres.ts (a resource's runs). */
const LIVENESS_KEY = (owner: string) => `hashtextextended(${owner}, 0)`;
const RUN_KEY = (resource: string) => `hashtextextended('vcu-sync sync ' || ${resource}, 0)`;

async function rows<T>(client: Client, sql: string, params: unknown[] = []): Promise<T[]> {
  return (await client.query(sql, params)).rows as T[];
}

async function resourceFacts(client: Client, pageSize: number | undefined): Promise<ResourceFacts[]> {
  const out: ResourceFacts[] = [];
  for (const { resource, table } of SYNC_RESOURCES) {
    const [last] = await rows<NonNullable<ResourceFacts['lastRun']>>(
      client,
      `SELECT id::float8 AS id, status, ${iso('started_at')} AS "startedAt", ${iso('finished_at')} AS "finishedAt",
              error, fetched, inserted, updated, removed, quarantined
         FROM sync_runs WHERE resource = $1 ORDER BY id DESC LIMIT 1`,
      [resource],
    );
    const [facts] = await rows<{ success: string | null; records: number; state: string | null }>(
      client,
      `SELECT (SELECT ${iso('max(finished_at)')} FROM sync_runs WHERE resource = $1 AND status = 'succeeded') AS success,
              (SELECT count(*)::int FROM "${table}" WHERE _removed_at IS NULL) AS records,
              (SELECT state FROM sync_checkpoints WHERE resource = $1) AS state`,
      [resource],
    );
    out.push({
      resource,
      lastSuccessAt: facts?.success ?? null,
      lastRun: last ?? null,
      records: facts?.records ?? 0,
      effectivePageSize: resource === 'custody' ? null : minKnown(pageSize, learnedPageSize(facts?.state)),
    });
  }
  return out;
}

/** `state -> n` of rows `{ k, n }`. */
function tally(list: Array<{ k: string; n: number }>): Record<string, number> {
  return Object.fromEntries(list.map((r) => [r.k, r.n]));
}

async function outboxFacts(client: Client, window: SnapshotWindow) {
  const byState = tally(
    await rows(client, 'SELECT state AS k, count(*)::int AS n FROM outbox GROUP BY state ORDER BY state'),
  );
  const [times] = await rows<{
    queued: string | null;
    accepted: string | null;
    awaiting: number;
    oldest: string | null;
  }>(
    client,
    `SELECT (SELECT ${iso('min(created_at)')} FROM outbox WHERE state IN ('queued', 'sending')) AS queued,
            (SELECT ${iso('min(accepted_at)')} FROM outbox WHERE state = 'accepted') AS accepted,
            (SELECT count(*)::int FROM outbox WHERE state = 'accepted' AND accepted_at < $1) AS awaiting,
            (SELECT ${iso('min(accepted_at)')} FROM outbox WHERE state = 'accepted' AND accepted_at < $1) AS oldest`,
    [window.decisionCutoff],
  );
  const finishedSince = tally(
    await rows(
      client,
      `SELECT state AS k, count(*)::int AS n FROM outbox
        WHERE state IN ('approved', 'rejected', 'failed', 'cancelled') AND finished_at >= $1 GROUP BY state`,
      [window.recentSince],
    ),
  );
  const recentFailures = await rows<HealthSnapshot['outbox']['recentFailures'][number]>(
    client,
    `SELECT "marketplaceTransactionRef" AS ref, "operationType" AS "operationType", last_error AS error, ${iso('updated_at')} AS at
       FROM outbox WHERE state = 'failed' ORDER BY updated_at DESC, id DESC LIMIT 10`,
  );
  const [pause] = await rows<{ value: string; updated_at: string }>(
    client,
    `SELECT value, ${iso('updated_at')} AS updated_at FROM daemon_state WHERE key = $1`,
    [PAUSE_KEY],
  );
  return {
    byState,
    oldestQueuedAt: times?.queued ?? null,
    paused: pausedSince(pauseOf(pause)),
    awaitingDecision: times?.awaiting ?? 0,
    oldestAwaitingAt: times?.oldest ?? null,
    oldestAcceptedAt: times?.accepted ?? null,
    finishedSince,
    recentFailures,
  } satisfies HealthSnapshot['outbox'];
}

const pausedSince = (p: ReturnType<typeof pauseOf>) => p && { reason: p.reason, since: p.since };

async function rejectionFacts(client: Client, window: SnapshotWindow): Promise<HealthSnapshot['rejections']> {
  const [since] = await rows<{ n: number }>(
    client,
    `SELECT count(*)::int AS n FROM outbox WHERE state = 'rejected' AND decided_at >= $1`,
    [window.recentSince],
  );
  const recent = await rows<HealthSnapshot['rejections']['recent'][number]>(
    client,
    `SELECT "marketplaceTransactionRef" AS ref, "operationType" AS "operationType", decision_reason AS reason, ${iso('decided_at')} AS at
       FROM outbox WHERE state = 'rejected' ORDER BY decided_at DESC, id DESC LIMIT 10`,
  );
  return { since: since?.n ?? 0, recent };
}

async function webhookFacts(client: Client, window: SnapshotWindow): Promise<HealthSnapshot['webhooks']> {
  const [w] = await rows<Omit<HealthSnapshot['webhooks'], 'lastUndecided'>>(
    client,
    `SELECT
       (SELECT count(*)::int FROM webhook_events WHERE received_at >= $1) AS received,
       (SELECT ${iso('max(received_at)')} FROM webhook_events) AS "lastReceivedAt",
       (SELECT count(*)::int FROM webhook_rejections WHERE at >= $1) AS "verificationFailures",
       (SELECT reason FROM webhook_rejections ORDER BY id DESC LIMIT 1) AS "lastFailureReason",
       (SELECT count(*)::int FROM webhook_events WHERE outcome = 'pending' AND received_at < $2) AS "pendingOlderThanCutoff",
       (SELECT count(*)::int FROM webhook_events WHERE id_reused AND received_at >= $1) AS "idReused",
       (SELECT count(*)::int FROM webhook_events WHERE outcome = 'undecided' AND received_at >= $1) AS undecided,
       (SELECT count(*)::int FROM webhook_events WHERE outcome = 'conflict') AS conflicts`,
    [window.recentSince, window.decisionCutoff],
  );
  if (!w) throw new Error('the webhook figures read no row');
  const [lastUndecided] =
    w.undecided > 0
      ? await rows<{ type: string | null; status: string | null }>(
          client,
          `SELECT event_type AS type, event_status AS status FROM webhook_events
            WHERE outcome = 'undecided' ORDER BY id DESC LIMIT 1`,
        )
      : [];
  return { ...w, lastUndecided: lastUndecided ?? null };
}

async function subscriberFacts(client: Client): Promise<SubscriberBacklog[]> {
  return rows<SubscriberBacklog>(
    client,
    `SELECT subscriber,
            count(*) FILTER (WHERE state IN ('pending', 'sending'))::int AS pending,
            count(*) FILTER (WHERE state = 'dead')::int AS dead,
            count(*) FILTER (WHERE state = 'delivered')::int AS delivered,
            ${iso("min(COALESCE(redriven_at, created_at)) FILTER (WHERE state IN ('pending', 'sending'))")} AS "oldestPendingAt",
            (SELECT h.last_error FROM deliveries h
              WHERE h.subscriber = d.subscriber AND h.state IN ('pending', 'sending') ORDER BY h.id LIMIT 1) AS "lastError"
       FROM deliveries d GROUP BY subscriber ORDER BY subscriber COLLATE "C"`,
  );
}

/** Every registered replica, alive or not, with its claims (by lease owner, byte order). */
export async function replicaFacts(client: Client): Promise<ReplicaFacts[]> {
  return rows<ReplicaFacts>(
    client,
    `SELECT r.lease_owner AS owner, r.name, r.holds AS runs,
            ${iso('r.started_at')} AS "startedAt", ${iso('r.last_heartbeat_at')} AS "lastHeartbeatAt",
            ${LOCK_HELD(LIVENESS_KEY('r.lease_owner'))} AS alive,
            (SELECT count(*)::int FROM outbox o WHERE o.state = 'sending' AND o.lease_owner = r.lease_owner) AS claimed,
            (SELECT count(*)::int FROM deliveries d WHERE d.state = 'sending' AND d.lease_owner = r.lease_owner)
              AS "claimedDeliveries",
            (SELECT ${iso('min(o.updated_at)')} FROM outbox o
              WHERE o.state = 'sending' AND o.lease_owner = r.lease_owner) AS "oldestClaimAt"
       FROM replicas r ORDER BY r.lease_owner COLLATE "C"`,
  );
}

async function runningSyncs(client: Client): Promise<RunningSync[]> {
  return rows<RunningSync>(
    client,
    `SELECT id::float8 AS id, resource, ${iso('started_at')} AS "startedAt", pid,
            ${LOCK_HELD(RUN_KEY('resource'))} AS "lockHeld"
       FROM sync_runs WHERE status = 'running' ORDER BY id`,
  );
}

/** The PostgreSQL snapshot, in one REPEATABLE READ transaction. */
export async function readPgSnapshot(
  pool: pg.Pool,
  window: SnapshotWindow,
  pageSize?: number,
): Promise<HealthSnapshot> {
  return inPgTransaction(pool, async (client) => {
    await client.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
    const resources = await resourceFacts(client, pageSize);
    const outbox = await outboxFacts(client, window);
    const rejections = await rejectionFacts(client, window);
    const quarantine = tally(
      await rows(
        client,
        'SELECT resource AS k, count(*)::int AS n FROM quarantine WHERE resolved_at IS NULL GROUP BY resource',
      ),
    );
    const webhooks = await webhookFacts(client, window);
    return {
      resources,
      outbox,
      rejections,
      quarantine,
      webhooks,
      // Write failures, locks and corruption are SQLite's file-level faults; the server has its own log.
      database: { ...NO_FAULTS },
      subscribers: await subscriberFacts(client),
      replicas: await replicaFacts(client),
      runningSyncs: await runningSyncs(client),
    };
  });
}

/**
 * How a failed read of the PostgreSQL snapshot is reported: a server that cannot be reached is
 * `unreachable` (since when `availability` says, when given), anything else a read error.
 */
export function pgReadFailed(err: unknown, availability?: PgAvailability): DatabaseFacts {
  const reason = unreachableReason(err);
  if (reason === null) return { ...NO_FAULTS, readError: errorMessage(err), readAction: pgReadAdvice(err) };
  const outage = availability?.outage();
  return { ...NO_FAULTS, unreachable: { reason, since: outage ? isoAt(outage.since) : null } };
}

/** The health reads of a PostgreSQL database; `availability` dates an outage (default: undated). */
export function pgHealthReads(pool: pg.Pool, availability?: PgAvailability): HealthReads {
  return {
    snapshot: (window, pageSize) => readPgSnapshot(pool, window, pageSize),
    async daemonStartedAt() {
      const { rows: found } = await pool.query<{ value: string }>(
        "SELECT value FROM daemon_state WHERE key = 'daemon'",
      );
      try {
        return found[0] ? ((JSON.parse(found[0].value) as { startedAt?: string }).startedAt ?? null) : null;
      } catch {
        return null;
      }
    },
    // pg's messages name host:port at most, never the URL's password.
    readFailed: (err) => pgReadFailed(err, availability),
    series: (now) => readSeriesPg(pool, now),
  };
}
