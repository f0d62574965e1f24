import path from 'node:path';
import type { OperationsStore } from '../../src/operations/storeSeam.js';
import type { PgDatabase } from '../../src/postgres/open.js';
import { PgOperationsStore } from '../../src/postgres/operationsStore.js';
import { useStateChangeSink } from '../../src/sqlite/changes.js';
import { openDatabase } from '../../src/sqlite/open.js';
import { SqliteOperationsStore } from '../../src/sqlite/operationsStore.js';
import { deliveriesSink } from '../../src/subscribers/deliverySinks.js';
import type { Subscriber } from '../../src/subscribers/subscribers.js';
import { tempDir } from '../helpers/context.js';

/**
 * The operations store seam over either store, SQLite (a temp file) or PostgreSQL, with readers of
 * what it wrote (the outbox, the operations feed, deliveries, attempts) in the same forms on both.
 */

export const ME = 'replica-me';

export const SUBSCRIBERS: Subscriber[] = [
  {
    key: 'app',
    url: 'http://127.0.0.1:1/hook',
    secret: 'whsec_x',
    events: [
      'operation.accepted',
      'operation.approved',
      'operation.rejected',
      'operation.failed',
      'operation.cancelled',
    ],
  },
];

export interface OperationsHarness {
  store: OperationsStore;
  /** The outbox by ref. */
  rows(): Promise<
    Array<{ ref: string; state: string; attempts: number; next: string; owner: string | null }>
  >;
  /** The operations feed, in seq order. */
  feed(): Promise<string[]>;
  /** Deliveries as `ref event`, in id order. */
  deliveries(): Promise<string[]>;
  attempts(): Promise<number>;
  reset(): Promise<void>;
  close(): Promise<void>;
}

const ROWS = `SELECT marketplaceTransactionRef AS ref, state, attempts, next_attempt_at AS next, lease_owner AS owner
  FROM outbox ORDER BY id`;
const FEED = "SELECT record_id || ' ' || kind AS v FROM changes WHERE resource = 'operations' ORDER BY seq";
const DELIVERIES = "SELECT ref || ' ' || event_type AS v FROM deliveries ORDER BY id";

export function sqliteOperationsHarness(): OperationsHarness {
  const { dir, cleanup } = tempDir();
  const database = openDatabase(path.join(dir, 'ops.db'));
  const { sqlite } = database;
  useStateChangeSink(sqlite, deliveriesSink(SUBSCRIBERS));
  const values = (sql: string) => (sqlite.prepare(sql).all() as Array<{ v: string }>).map((r) => r.v);
  return {
    store: new SqliteOperationsStore(sqlite),
    rows: async () => sqlite.prepare(ROWS).all() as Awaited<ReturnType<OperationsHarness['rows']>>,
    feed: async () => values(FEED),
    deliveries: async () => values(DELIVERIES),
    attempts: async () =>
      (sqlite.prepare('SELECT count(*) AS n FROM outbox_attempts').get() as { n: number }).n,
    reset: async () => {
      sqlite.exec(
        'DELETE FROM outbox_attempts; DELETE FROM outbox; DELETE FROM changes; DELETE FROM deliveries',
      );
    },
    close: async () => {
      database.close();
      cleanup();
    },
  };
}

/** PostgreSQL's, on the shared database of a test file: `reset` empties it between cases. */
export function postgresOperationsHarness(db: PgDatabase): OperationsHarness {
  const values = async (sql: string) => (await db.pool.query<{ v: string }>(sql)).rows.map((r) => r.v);
  return {
    store: new PgOperationsStore(db.pool, { onStateChange: deliveriesSink(SUBSCRIBERS) }),
    rows: async () =>
      (
        await db.pool.query(
          ROWS.replace('marketplaceTransactionRef', '"marketplaceTransactionRef"').replace(
            'next_attempt_at AS next',
            `to_char(next_attempt_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS next`,
          ),
        )
      ).rows,
    feed: () => values(FEED),
    deliveries: () => values(DELIVERIES),
    attempts: async () =>
      Number((await db.pool.query('SELECT count(*) AS n FROM outbox_attempts')).rows[0].n),
    reset: async () => {
      await db.pool.query('TRUNCATE outbox, outbox_attempts, changes, deliveries RESTART IDENTITY CASCADE');
    },
    close: async () => {},
  };
}
