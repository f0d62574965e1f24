import { fileURLToPath } from 'node:url';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import { systemClock } from '../common/clock.js';
import { errorMessage, UserError } from '../common/errors.js';
import { scrubText } from '../common/redact.js';
import * as schema from '../db/schema/postgres.js';
import type { ChangeRow } from '../store/script.js';
import { MIGRATION_LOCK_KEY } from './advisoryLocks.js';
import { PgAvailability } from './availability.js';
import { commitPgTransaction, dropFeedTransaction, openFeedTransaction, recordChangesPg } from './changes.js';
import { type PgConnection, pgConnection } from './connection.js';
import { ObservedPool } from './pool.js';

export type PgDb = NodePgDatabase<typeof schema>;

/** An open PostgreSQL store: the pool for raw SQL, drizzle for the rest. */
export interface PgDatabase {
  pool: pg.Pool;
  db: PgDb;
  /** `host:port/database`, for messages: no user, no password. */
  label: string;
  /** Whether the server could be reached at the last connection attempt (fed by the pool). */
  availability: PgAvailability;
  close(): Promise<void>;
}

/** Options of {@link openPostgres}. */
export interface PgOpenOptions {
  /** `application_name` unless the URL gives one, e.g. `pgApplicationName(instance)` (default: "vcu-sync"). */
  applicationName?: string;
  /** Apply pending migrations (default: true). */
  migrate?: boolean;
  /** Most connections the pool opens (default: 10, pg's). */
  max?: number;
  /**
   * Connections kept open while idle, so a busy server (`max_connections` reached by others) does
   * not take them from this process between two bursts (default: 0, pg's).
   */
  min?: number;
  /**
   * Longest wait for a connection: a new one to open, or a busy pool to free one; then the query
   * fails with an error the callers retry (default: 10000 ms).
   */
  connectTimeoutMs?: number;
  /**
   * Called once when a pooled connection breaks, idle or in use (server restart, backend ended,
   * network cut). pg emits this as an `error` event that would end the process unhandled; the broken
   * connection is dropped and the next query opens a new one (default: ignored).
   */
  onConnectionLost?: (err: Error) => void;
  /** The tracker the pool's connection attempts feed (default: a new one on the system clock). */
  availability?: PgAvailability;
}

/** Default of {@link PgOpenOptions.connectTimeoutMs}. */
export const PG_CONNECT_TIMEOUT_MS = 10_000;

/** The PostgreSQL migrations folder (drizzle/pg), found from this file in both src/ and dist/. */
export const PG_MIGRATIONS_FOLDER = fileURLToPath(new URL('../../drizzle/pg', import.meta.url));

/** Where drizzle records applied migrations (its default, named here for `db migrate` to count). */
const MIGRATIONS_SCHEMA = 'drizzle';
const MIGRATIONS_TABLE = '__drizzle_migrations';

/**
 * The server's words, on one line: drizzle wraps them in "Failed query: <the whole SQL>", whose
 * cause is the server's error.
 */
function pgErrorLine(err: unknown): string {
  const cause = (err as { cause?: unknown }).cause;
  const message = cause instanceof Error ? cause.message : errorMessage(err);
  return scrubText(message.split('\n')[0] ?? '');
}

/** The one-line error of a failed open; `cause` keeps pg's error, for callers that classify it. */
function connectProblem(label: string, err: unknown): UserError {
  const problem = new UserError(`database: cannot connect to PostgreSQL at ${label}: ${pgErrorLine(err)}`);
  problem.cause = err;
  return problem;
}

/** The server refused TLS ('N' to SSLRequest): what libpq's `prefer` falls back to plain text on. */
function isNoTlsServer(err: unknown): boolean {
  return /does not support SSL/i.test(errorMessage(err));
}

/**
 * Resolves `sslmode=prefer` once, the way libpq does per connection: TLS if the server offers it,
 * else plain text. The whole pool then uses the answer.
 */
async function resolvePrefer(connection: PgConnection): Promise<pg.ClientConfig> {
  if (connection.sslmode !== 'prefer') return connection.client;
  const probe = new pg.Client(connection.client);
  probe.on('error', () => {});
  try {
    await probe.connect();
    return connection.client;
  } catch (err) {
    if (isNoTlsServer(err)) return { ...connection.client, ssl: false };
    throw connectProblem(connection.label, err);
  } finally {
    await probe.end().catch(() => {});
  }
}

/**
 * Applies pending migrations on one session that holds the migration advisory lock. drizzle's
 * migrator runs them in one transaction; the lock keeps two replicas from both creating the tables.
 */
export async function migratePostgres(pool: pg.Pool, label: string): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      await migrate(drizzle(client), {
        migrationsFolder: PG_MIGRATIONS_FOLDER,
        migrationsSchema: MIGRATIONS_SCHEMA,
        migrationsTable: MIGRATIONS_TABLE,
      });
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } catch (err) {
    throw new UserError(`database: migration failed on ${label}: ${pgErrorLine(err)}`);
  } finally {
    client.release();
  }
}

/** How many migrations the database has applied (0 before the first). */
export async function appliedMigrations(pool: pg.Pool): Promise<number> {
  const result = await pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM "${MIGRATIONS_SCHEMA}"."${MIGRATIONS_TABLE}"`,
  );
  return Number(result.rows[0]?.n ?? 0);
}

/**
 * Opens a pool on `url` (libpq semantics, see ./pgConfig.ts), checks that it connects, and unless
 * told otherwise brings the schema up to date. Errors are one line naming host:port/database,
 * never the user's password.
 */
export async function openPostgres(url: string, options: PgOpenOptions = {}): Promise<PgDatabase> {
  const connection = pgConnection(url, { applicationName: options.applicationName });
  const client = await resolvePrefer(connection);
  const availability = options.availability ?? new PgAvailability(systemClock);
  const pool = new ObservedPool(
    {
      ...client,
      max: options.max ?? 10,
      min: options.min ?? 0,
      connectionTimeoutMillis: options.connectTimeoutMs ?? PG_CONNECT_TIMEOUT_MS,
      // TCP keepalive: an idle connection to a host that vanished is found dead, not kept for hours.
      keepAlive: true,
    },
    { availability, onConnectionLost: options.onConnectionLost ?? (() => {}) },
  );
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await pool.end();
  };
  try {
    await pool.query('SELECT 1');
  } catch (err) {
    await close().catch(() => {});
    throw connectProblem(connection.label, err);
  }
  if (options.migrate ?? true) {
    try {
      await migratePostgres(pool, connection.label);
    } catch (err) {
      await close().catch(() => {});
      throw err;
    }
  }
  return { pool, db: drizzle(pool, { schema }), label: connection.label, availability, close };
}

/** The answer to a BEGIN's message: one result, or one per statement when it held several. */
export type BeginAnswer = pg.QueryResult | pg.QueryResult[];

/**
 * Runs `work` in one transaction on one pooled connection: COMMIT when it resolves, ROLLBACK when
 * it throws (the error goes on). The one way this code opens a PostgreSQL transaction.
 */
export async function inPgTransaction<T>(
  pool: pg.Pool,
  /** `begun`: what the BEGIN's message answered (one result per statement in a custom `begin`). */
  work: (client: pg.PoolClient, begun: BeginAnswer) => Promise<T>,
  /** `begin`: the BEGIN's message, text or a query config (its row types, for statements sent with it). */
  options: { begin?: string | pg.QueryConfig } = {},
): Promise<T> {
  return (await runPgTransaction(pool, work, options.begin)).result;
}

/** One transaction appending `rows` to the feed alone; resolves with their last seq (0 for none). */
export async function appendChangesPg(pool: pg.Pool, rows: ReadonlyArray<ChangeRow>): Promise<number> {
  return (await runPgTransaction(pool, async (client) => recordChangesPg(client, rows))).lastSeq;
}

/** inPgTransaction, and the last feed seq its commit appended (0 for none). */
async function runPgTransaction<T>(
  pool: pg.Pool,
  work: (client: pg.PoolClient, begun: BeginAnswer) => Promise<T>,
  begin: string | pg.QueryConfig = 'BEGIN',
): Promise<{ result: T; lastSeq: number }> {
  const client = await pool.connect();
  // A connection whose ROLLBACK failed is in no known state (most often it broke): destroyed, not pooled.
  let broken: Error | undefined;
  try {
    const begun = (await client.query(begin)) as BeginAnswer;
    openFeedTransaction(client);
    const result = await work(client, begun);
    // The feed rows the work recorded are appended in the COMMIT's own message (pgChanges.ts).
    const lastSeq = await commitPgTransaction(client);
    return { result, lastSeq };
  } catch (err) {
    dropFeedTransaction(client);
    await client.query('ROLLBACK').catch((rollbackErr: unknown) => {
      broken = rollbackErr instanceof Error ? rollbackErr : new Error(String(rollbackErr));
    });
    throw err;
  } finally {
    client.release(broken);
  }
}

/**
 * A timestamptz as SQLite stores it (`Date#toISOString()`: ms, `Z`), for statements sent with raw
 * `pg` queries; those run through postgres/scripts.ts read times so already.
 */
export const iso = (col: string) => `to_char(${col} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
