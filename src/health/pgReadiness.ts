import type pg from 'pg';
import { realSchedule, type Schedule } from '../clock.js';
import { migrationsNewerThan } from '../db/migrations.js';
import { PG_MIGRATIONS_FOLDER } from '../db/pg.js';
import { unreachableReason } from '../db/pgAvailability.js';
import { errorMessage } from '../errors.js';
import { iso } from '../operations/pgRows.js';
import { PAUSE_KEY, pauseOf } from '../outbox/pause.js';
import { scrubText } from '../redact.js';
import { EXPECTED_LISTENERS, type ReadinessFacts, type ReadinessReader } from './readiness.js';

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
type DatabaseFacts = Pick<
  ReadinessFacts,
  'databaseUnanswered' | 'databaseUnreachable' | 'writeBlocked' | 'pendingMigrations' | 'sendingPaused'
>;

const UNKNOWN = { writeBlocked: null, pendingMigrations: 0, sendingPaused: null } as const;

/** The server's words, one line, no secrets (pg's messages name no password; scrubbed anyway). */
function problem(err: unknown): string {
  return scrubText(errorMessage(err).split('\n')[0] ?? '') || 'unknown error';
}

async function readDatabaseFacts(pool: pg.Pool): Promise<DatabaseFacts> {
  try {
    const state = await pool.query<{ read_only: boolean; migrated: boolean }>(
      `SELECT current_setting('transaction_read_only') = 'on' AS read_only,
              to_regclass('drizzle.__drizzle_migrations') IS NOT NULL AS migrated`,
    );
    const { read_only: readOnly, migrated } = state.rows[0] ?? { read_only: false, migrated: false };
    let newest = Number.NEGATIVE_INFINITY;
    let pause: { value: string; updated_at: string } | undefined;
    if (migrated) {
      const schema = await pool.query<{ newest: number | null; value: string | null; updated_at: string }>(
        `SELECT (SELECT max(created_at)::float8 FROM drizzle.__drizzle_migrations) AS newest,
                d.value, ${iso('d.updated_at')} AS updated_at
           FROM (SELECT 1) AS one LEFT JOIN daemon_state d ON d.key = $1`,
        [PAUSE_KEY],
      );
      const row = schema.rows[0];
      if (row?.newest != null) newest = row.newest;
      if (row?.value != null) pause = { value: row.value, updated_at: row.updated_at };
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
    return { databaseUnanswered: problem(err), ...UNKNOWN };
  }
}

/** PostgreSQL's facts reader for `createApiComponent(ctx, registrars, { readiness })`. */
export function pgReadiness(pool: pg.Pool, options: PgReadinessOptions = {}): ReadinessReader {
  const boundMs = options.boundMs ?? 2_000;
  const schedule = options.schedule ?? realSchedule;
  let inFlight: Promise<DatabaseFacts> | null = null;
  const unanswered: DatabaseFacts = {
    databaseUnanswered: `no answer within ${boundMs / 1000} s`,
    ...UNKNOWN,
  };
  return async (listeners) => {
    if (inFlight === null) {
      const read = readDatabaseFacts(pool);
      inFlight = read;
      void read.finally(() => {
        if (inFlight === read) inFlight = null;
      });
    }
    let cancel: () => void = () => {};
    const bound = new Promise<DatabaseFacts>((resolve) => {
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
