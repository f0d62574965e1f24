import pg from 'pg';
import type { Cluster, ClusterInfo } from '../postgres.js';
import type { Producer } from './producer.js';
import type { Replica } from './replicas.js';

/**
 * The five faults of the chaos scenarios (issue 25), each an injector that holds its fault for a
 * number of the producer's ticks (at a fixed rate, ticks are time as the clients see it) and says
 * how many sends were in flight when it struck: what may come to the operator twice, because a
 * request answered while its settle could not be recorded is sent again.
 */

export const FAULTS = [
  'postgres_restart',
  'pg_backend_kill',
  'pool_exhaustion',
  'crash_recovery',
  'idle_in_tx',
] as const;

export type FaultName = (typeof FAULTS)[number];

/** How long a fault lasts, in seconds of the producer's clock (the issue's figures in the bench). */
export interface FaultTimes {
  /** postgres_restart: seconds between `pg_ctl stop -m fast` and start (issue: 8). */
  restartDownSeconds: number;
  /** pg_backend_kill: seconds of killing (issue: 20), `killsPerSecond` rounds a second (issue: 2). */
  backendKillSeconds: number;
  killsPerSecond: number;
  /** pool_exhaustion: seconds the server's every free slot is held (issue: 20). */
  poolHoldSeconds: number;
  /** crash_recovery: seconds between the SIGKILL and the new process's start (issue: 5). */
  crashDownSeconds: number;
  /** idle_in_tx: seconds the writing transaction stays idle (issue: 20). */
  idleTxSeconds: number;
}

/** The issue's figures. */
export const ISSUE_FAULT_TIMES: FaultTimes = {
  restartDownSeconds: 8,
  backendKillSeconds: 20,
  killsPerSecond: 2,
  poolHoldSeconds: 20,
  crashDownSeconds: 5,
  idleTxSeconds: 20,
};

/** What an injector reaches. */
export interface FaultTarget {
  cluster: Cluster;
  /** The replicas' database. */
  database: string;
  replicas: readonly Replica[];
  producer: Producer;
  ratePerSecond: number;
}

/** What an injection did. */
export interface FaultReport {
  /** How many times the fault struck (pg_backend_kill: rounds of terminations). */
  injections: number;
  /** Sends in flight (rows in `sending`) when it struck, summed over the injections. */
  inFlightAtFault: number;
  /** A figure worth keeping, e.g. how many backends were terminated or slots held. */
  detail: string;
}

const ticksOf = (target: FaultTarget, seconds: number) =>
  Math.max(1, Math.round(seconds * target.ratePerSecond));

/** Sessions tried by {@link withDatabaseAdmin} before it gives up (200 ms apart). */
const ADMIN_ATTEMPTS = 150;

/** A superuser session on the replicas' database (a reserved slot: it works when the others are full). */
async function adminClient(info: ClusterInfo, database: string): Promise<pg.Client> {
  const client = new pg.Client({
    host: info.host,
    port: info.port,
    user: info.adminUser,
    password: info.adminPassword,
    database,
  });
  client.on('error', () => {}); // The fault may end it; the next call opens another.
  await client.connect();
  return client;
}

/**
 * Runs `fn` on a fresh admin session, again on a new one if the session breaks (the server may be
 * just back from a restart, or still ending sessions): the harness's own reads must not fail a run.
 */
export async function databaseAdmin<T>(
  info: ClusterInfo,
  database: string,
  fn: (client: pg.Client) => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    let client: pg.Client | undefined;
    try {
      client = await adminClient(info, database);
      return await fn(client);
    } catch (err) {
      if (attempt >= ADMIN_ATTEMPTS) throw err;
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      await client?.end().catch(() => {});
    }
  }
}

const withDatabaseAdmin = <T>(target: FaultTarget, fn: (client: pg.Client) => Promise<T>) =>
  databaseAdmin(target.cluster.info, target.database, fn);

/** Rows being sent right now, of one lease owner or of all. */
async function sendingNow(client: pg.Client, owner?: string): Promise<number> {
  const { rows } = await client.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM outbox WHERE state = 'sending' AND ($1::text IS NULL OR lease_owner = $1)`,
    [owner ?? null],
  );
  return rows[0]!.n;
}

/** A session as the daemon's own role, as another client of the database would hold one. */
function roleClient(info: ClusterInfo, database: string): pg.Client {
  const client = new pg.Client({
    host: info.host,
    port: info.port,
    user: info.user,
    password: info.password,
    database,
  });
  client.on('error', () => {});
  return client;
}

/**
 * `pg_ctl stop -m fast`, the down time, `pg_ctl start`. In flight: the rows `sending` as the stop
 * froze them. An admin session locks the outbox against writes (reads still go), counts under the
 * lock and holds it until the stop ends every session, so nothing is claimed or settled between the
 * count and the stop. Counted before the stop and again once the server was back, rows claimed in
 * between and settled as it came back were in neither count: 3 repeats against 1 in one full run.
 */
async function postgresRestart(target: FaultTarget, times: FaultTimes): Promise<FaultReport> {
  const locker = await adminClient(target.cluster.info, target.database);
  let inFlight: number;
  try {
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE outbox IN EXCLUSIVE MODE');
    inFlight = await sendingNow(locker);
    await target.cluster.halt('fast');
  } finally {
    await locker.end().catch(() => {});
  }
  await target.producer.afterTicks(ticksOf(target, times.restartDownSeconds));
  await target.cluster.resume();
  return { injections: 1, inFlightAtFault: inFlight, detail: `down ${times.restartDownSeconds} s` };
}

/** Terminates the database's active and idle-in-transaction backends, `killsPerSecond` times a second. */
async function backendKill(target: FaultTarget, times: FaultTimes): Promise<FaultReport> {
  const rounds = Math.max(1, Math.round(times.backendKillSeconds * times.killsPerSecond));
  const every = ticksOf(target, 1 / times.killsPerSecond);
  let inFlight = 0;
  let terminated = 0;
  for (let round = 0; round < rounds; round++) {
    await withDatabaseAdmin(target, async (admin) => {
      inFlight += await sendingNow(admin);
      const { rows } = await admin.query<{ n: number }>(
        `SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
         WHERE datname = $1 AND pid <> pg_backend_pid()
           AND state IN ('active', 'idle in transaction', 'idle in transaction (aborted)')`,
        [target.database],
      );
      terminated += rows[0]!.n;
    });
    await target.producer.afterTicks(every);
  }
  return { injections: rounds, inFlightAtFault: inFlight, detail: `${terminated} backends terminated` };
}

/** Opens idle sessions as the daemon's role until the server refuses one, holds them, ends them. */
async function poolExhaustion(target: FaultTarget, times: FaultTimes): Promise<FaultReport> {
  const inFlight = await withDatabaseAdmin(target, (c) => sendingNow(c));
  const held: pg.Client[] = [];
  try {
    for (;;) {
      const client = roleClient(target.cluster.info, target.database);
      try {
        await client.connect();
      } catch (err) {
        // 53300 too_many_connections: every slot a non-superuser may take is taken.
        if ((err as { code?: string }).code === '53300') break;
        throw err;
      }
      held.push(client);
    }
    await target.producer.afterTicks(ticksOf(target, times.poolHoldSeconds));
  } finally {
    await Promise.all(held.map((c) => c.end().catch(() => {})));
  }
  return { injections: 1, inFlightAtFault: inFlight, detail: `${held.length} slots held` };
}

/**
 * SIGKILLs the first replica, starts it again after the down time (same ports, a new owner). In
 * flight: the rows the dead process held in `sending`, the larger of the counts just before the
 * kill and once it is gone (unless the survivor's sweep took them back in between).
 */
async function crashRecovery(target: FaultTarget, times: FaultTimes): Promise<FaultReport> {
  const victim = target.replicas[0]!;
  const owner = victim.owner() ?? '';
  const before = await withDatabaseAdmin(target, (c) => sendingNow(c, owner));
  await victim.kill();
  const after = await withDatabaseAdmin(target, (c) => sendingNow(c, owner));
  const inFlight = Math.max(before, after);
  await target.producer.afterTicks(ticksOf(target, times.crashDownSeconds));
  await victim.start();
  return {
    injections: 1,
    inFlightAtFault: inFlight,
    detail: `replica ${victim.index} down ${times.crashDownSeconds} s`,
  };
}

/**
 * A transaction that wrote to every unfinished operation (as a person's forgotten
 * `BEGIN; UPDATE outbox ...` in psql would) and then sits idle, holding those rows' locks, until
 * rolled back: those rows can be neither claimed, settled nor decided meanwhile.
 */
async function idleInTransaction(target: FaultTarget, times: FaultTimes): Promise<FaultReport> {
  const client = roleClient(target.cluster.info, target.database);
  await client.connect();
  try {
    await client.query('BEGIN');
    // In flight: the rows `sending` as they are locked, read by the lock itself. Counted just before
    // it, the rows the replicas claimed (ahead) between the count and the lock were missed: 3
    // repeats against "1 in flight" with 9 rows locked, in one full run.
    const { rows } = await client.query<{ state: string }>(
      `UPDATE outbox SET updated_at = updated_at WHERE state IN ('queued', 'sending', 'accepted') RETURNING state`,
    );
    const inFlight = rows.filter((r) => r.state === 'sending').length;
    await target.producer.afterTicks(ticksOf(target, times.idleTxSeconds));
    await client.query('ROLLBACK');
    return { injections: 1, inFlightAtFault: inFlight, detail: `${rows.length} rows locked` };
  } finally {
    await client.end().catch(() => {});
  }
}

const INJECTORS: Record<FaultName, (target: FaultTarget, times: FaultTimes) => Promise<FaultReport>> = {
  postgres_restart: postgresRestart,
  pg_backend_kill: backendKill,
  pool_exhaustion: poolExhaustion,
  crash_recovery: crashRecovery,
  idle_in_tx: idleInTransaction,
};

/** Injects `fault` and resolves once it is over (the database back, the slots freed, the replica up). */
export function injectFault(fault: FaultName, target: FaultTarget, times: FaultTimes): Promise<FaultReport> {
  return INJECTORS[fault](target, times);
}
