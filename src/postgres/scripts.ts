import pg from 'pg';
import {
  isFeedStep,
  type Outcome,
  type Row,
  type Script,
  type ScriptStore,
  type TransactionOptions,
} from '../store/script.js';
import type { Dialect, Sql, TransactionLock } from '../store/sql.js';
import { FEED_LOCK_KEY, RECONCILE_LOCK_KEY } from './advisoryLocks.js';
import { recordChangesPg } from './changes.js';
import { inPgTransaction } from './open.js';

/**
 * Scripts (store/script.ts) on PostgreSQL: driven with awaits inside one `inPgTransaction`, whose
 * commit appends the feed rows they added (postgres/changes.ts). Rows read back as SQLite gives them,
 * so a rule reads the same values on both stores: `bigint` as a number (no id nears 2^53),
 * `timestamptz` as `Date#toISOString()` text (ms, `Z`), `numeric` as a number.
 */

/**
 * Each transaction lock's advisory key (./advisoryLocks.ts). The feed's is also taken by the append
 * at commit (./changes.ts), a no-op after this one.
 */
const TRANSACTION_LOCK_KEYS: Record<TransactionLock, string> = {
  feed: FEED_LOCK_KEY,
  reconcile: RECONCILE_LOCK_KEY,
};

/** PostgreSQL's spelling: `$n` placeholders (typed where it cannot infer), `GREATEST`/`LEAST`. */
export const postgresDialect: Dialect = {
  capabilities: { sharedByProcesses: true },
  placeholder: (n, type) => (type ? `$${n}::${type}` : `$${n}`),
  bind: (value) => value,
  greatest: (a, b) => `GREATEST(${a}, ${b})`,
  least: (a, b) => `LEAST(${a}, ${b})`,
  transactionLock: (lock) => `SELECT pg_advisory_xact_lock(${TRANSACTION_LOCK_KEYS[lock]})`,
  indexCatalog:
    '(SELECT indexname::text AS name, tablename::text AS tbl FROM pg_indexes WHERE schemaname = current_schema())',
  indexedBy: () => '',
};

const parseTimestamptz = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ) as (text: string) => Date;

/** The parsers of {@link runPostgres}'s rows; every other type as pg's defaults. */
export const ROW_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (oid === pg.types.builtins.INT8 || oid === pg.types.builtins.NUMERIC) return Number;
    if (oid === pg.types.builtins.TIMESTAMPTZ) return (text: string) => parseTimestamptz(text).toISOString();
    return pg.types.getTypeParser(oid, format);
    // pg's overloads type the parser per format; this one serves both as pg's own does.
  }) as pg.CustomTypesConfig['getTypeParser'],
};

/** Runs one statement on `client` (a pool, or a transaction's connection). */
export async function runPostgres(client: pg.ClientBase | pg.Pool, statement: Sql): Promise<Outcome> {
  const { text, values } = statement.render(postgresDialect);
  if (text.trim() === '') return { rows: [], rowCount: 0 };
  const result = await client.query<Row>({ text, values, types: ROW_TYPES });
  return { rows: result.rows, rowCount: result.rowCount ?? 0 };
}

/** Drives `script` to its end on `client`, in the transaction the caller holds. */
export async function drivePostgres<T>(client: pg.ClientBase, script: Script<T>): Promise<T> {
  let step = script.next();
  try {
    while (!step.done) {
      const current = step.value;
      if (isFeedStep(current)) {
        recordChangesPg(client, current.feed);
        step = script.next({ rows: [], rowCount: current.feed.length });
      } else {
        step = script.next(await runPostgres(client, current));
      }
    }
    return step.value;
  } finally {
    if (!step.done) script.return(undefined as T);
  }
}

/**
 * A request's transaction waits for another session's row or advisory lock no longer than its
 * grace (`lock_timeout`, set in the BEGIN's own message: no extra round trip), then fails and the
 * request is answered 503 with Retry-After. A transaction left idle on the rows it updated would
 * otherwise hold each webhook for those rows, and the pool connection under it, for as long as it
 * stays idle: the pool filled with waiting webhooks and every other request waited for a connection.
 */
function beginFor(options: TransactionOptions | undefined): { begin?: string } {
  const grace = options?.busyGraceMs;
  return grace === undefined
    ? {}
    : { begin: `BEGIN; SET LOCAL lock_timeout = ${Math.max(1, Math.ceil(grace))}` };
}

/** The script store of one PostgreSQL pool. */
export function postgresScriptStore(pool: pg.Pool): ScriptStore {
  return {
    dialect: postgresDialect,
    transaction: <T>(script: Script<T>, options?: TransactionOptions) =>
      inPgTransaction(pool, (client) => drivePostgres(client, script), beginFor(options)),
    read: async <R extends object = Row>(statement: Sql) => (await runPostgres(pool, statement)).rows as R[],
  };
}
