import pg from 'pg';
import { livenessLock } from './advisoryLocks.js';
import type { PgAvailability } from './availability.js';

/**
 * Replica liveness on PostgreSQL. Each replica holds a session advisory lock keyed by its lease
 * owner on a connection of its own for as long as it lives; the server drops the lock when that
 * connection goes (process killed, host gone, backend terminated). So a free lock means a dead
 * owner, and its claims can come back at once instead of after their lease: `releaseDeadPg`, run
 * by every replica at start and every sweep (pgPresence.ts), tries each other owner's lock and
 * hands back the work of those it gets (and drops their `replicas` row). Hold the liveness lock
 * before the first claim; heartbeat through it so `replicas` shows who is up.
 */

/** The lock key of a lease owner (SQL expression over the owner's name in `param`). */

/** How long a statement on the liveness session may take before it counts as failed (ms). */
export const LIVENESS_QUERY_TIMEOUT_MS = 10_000;

/** A replica's liveness: a dedicated connection holding its owner's session lock. */
export interface ReplicaLiveness {
  owner: string;
  /** The backend pid of the liveness session (what `pg_terminate_backend` would end). */
  pid: number;
  /** Stamps `replicas.last_heartbeat_at` through the liveness session itself (fails once it is gone). */
  heartbeat(nowIso: string): Promise<void>;
  /** Ends the session (and its `replicas` row): the lock goes with it. */
  close(): Promise<void>;
}

/** Who a replica is, for its `replicas` row. */
export interface ReplicaInfo {
  /** Its lease owner: unique per process. */
  owner: string;
  /** The instance name it runs as. */
  name: string;
  /** What it runs, comma-separated (e.g. `outbox,mirror`). */
  holds: string;
  /** Its start (ISO). */
  now: string;
}

/**
 * Opens the liveness session for `replica.owner`, takes its lock and writes its `replicas` row; fails if another live session holds
 * it (two replicas must not share a lease owner). `onLost` is called if the connection breaks:
 * the replica is then presumed dead by the others and must stop claiming.
 */
export async function holdLiveness(
  pool: pg.Pool,
  replica: ReplicaInfo,
  onLost: (err: Error) => void = () => {},
  availability?: PgAvailability,
): Promise<ReplicaLiveness> {
  // Not a pooled connection: the pool could hand it to others or close it when idle. A heartbeat
  // on a connection cut without a FIN would wait forever: after the timeout it fails, the replica
  // takes itself for lost and re-takes its lock, and a stop is not held up by it.
  // The pool keeps its password non-enumerable (out of logs): a spread would drop it.
  const client = new pg.Client({
    ...pool.options,
    password: pool.options.password,
    query_timeout: LIVENESS_QUERY_TIMEOUT_MS,
  });
  // pg emits the server's message, then "Connection terminated unexpectedly": both are handled.
  client.on('error', onLost);
  const { owner } = replica;
  try {
    await client.connect();
  } catch (err) {
    availability?.noteConnectFailed(err);
    throw err;
  }
  availability?.noteConnected();
  try {
    // A host that vanishes sends no FIN: with the server's default keepalive (hours, from the OS)
    // its session, and so its lock, would outlive it that long. Probes after 10 s idle, 5 s apart,
    // 3 lost: the server ends the session in about 25 s and the others take its work back.
    await client.query(
      'SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3',
    );
    const { rows } = await client.query<{ ok: boolean; pid: number }>(
      `SELECT pg_try_advisory_lock(${livenessLock('$1')}) AS ok, pg_backend_pid() AS pid`,
      [owner],
    );
    if (!rows[0]?.ok) throw new Error('another live replica holds this lease owner');
    await client.query(
      `INSERT INTO replicas (lease_owner, name, started_at, last_heartbeat_at, holds) VALUES ($1, $2, $3, $3, $4)
       ON CONFLICT (lease_owner) DO UPDATE SET name = $2, started_at = $3, last_heartbeat_at = $3, holds = $4`,
      [owner, replica.name, replica.now, replica.holds],
    );
    return {
      owner,
      pid: rows[0].pid,
      heartbeat: async (nowIso) => {
        await client.query('UPDATE replicas SET last_heartbeat_at = $2 WHERE lease_owner = $1', [
          owner,
          nowIso,
        ]);
      },
      close: async () => {
        await client.query('DELETE FROM replicas WHERE lease_owner = $1', [owner]).catch(() => {});
        await client.end();
      },
    };
  } catch (err) {
    await client.end().catch(() => {});
    throw err;
  }
}

/**
 * Hands back the claims of every dead owner other than `self`: for each lease owner of a `sending`
 * outbox row or delivery, or with a `replicas` row, try its lock; got it means its session is gone,
 * so `release(owner)` runs (the caller's transactions: the outbox rows, the deliveries, or both),
 * then its `replicas` row goes and the lock is let go. An owner whose lock is held is alive and left
 * alone; so is one another replica is releasing at that moment (it holds the lock). Returns what
 * `release` returned, one entry per dead owner, in the order they were found.
 */
export async function releaseDeadPg<R>(
  pool: pg.Pool,
  self: string,
  release: (owner: string) => Promise<R>,
): Promise<R[]> {
  const client = await pool.connect();
  const released: R[] = [];
  try {
    // Owners of claims, and replicas registered: a dead one's row goes too, claims or not. Its
    // deliveries count on their own: a release of its outbox rows alone drops its replicas row,
    // and the next sweep must still find its deliveries.
    const { rows } = await client.query<{ owner: string }>(
      `SELECT lease_owner AS owner FROM outbox WHERE state = 'sending' AND lease_owner IS NOT NULL AND lease_owner <> $1
       UNION SELECT lease_owner FROM deliveries WHERE state = 'sending' AND lease_owner IS NOT NULL AND lease_owner <> $1
       UNION SELECT lease_owner FROM replicas WHERE lease_owner <> $1
       ORDER BY owner`,
      [self],
    );
    for (const { owner } of rows) {
      const got = await client.query<{ ok: boolean }>(
        `SELECT pg_try_advisory_lock(${livenessLock('$1')}) AS ok`,
        [owner],
      );
      if (!got.rows[0]?.ok) continue;
      try {
        released.push(await release(owner));
        await client.query('DELETE FROM replicas WHERE lease_owner = $1', [owner]);
      } finally {
        await client.query(`SELECT pg_advisory_unlock(${livenessLock('$1')})`, [owner]);
      }
    }
  } finally {
    client.release();
  }
  return released;
}
