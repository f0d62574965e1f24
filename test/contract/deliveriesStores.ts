import type pg from 'pg';
import type { Sqlite } from '../../src/sqlite/open.js';

/**
 * Deliveries rows for the seam's tests on either store: written straight into the table (the
 * writers are the operations stores', tested with them), read back the same on both.
 */

/** A row to write: pending, due at `at`. */
export interface NewDeliveryRow {
  subscriber: string;
  at: string;
}

export interface DeliveriesHarness {
  insert(rows: readonly NewDeliveryRow[]): Promise<void>;
  /** Every row in id order. */
  rows(): Promise<Array<{ id: number; state: string; attempts: number; owner: string | null }>>;
  /** What a settle writes, every row in id order (times as ISO text on both). */
  outcomes(): Promise<DeliveryOutcomeColumns[]>;
  reset(): Promise<void>;
}

export interface DeliveryOutcomeColumns {
  id: number;
  state: string;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: string;
  lease_until: string | null;
  delivered_at: string | null;
  dead_at: string | null;
}

const OUTCOME_COLUMNS = 'state, last_status, last_error, lease_until, delivered_at, dead_at';

let serial = 0;
const webhookId = () => `msg_test_${process.pid}_${++serial}`;

export function sqliteDeliveries(sqlite: Sqlite): DeliveriesHarness {
  const insert = sqlite.prepare(
    `INSERT INTO deliveries (subscriber, event_type, ref, webhook_id, body, state, attempts, next_attempt_at, created_at, updated_at)
     VALUES (?, 'operation.accepted', ?, ?, '{}', 'pending', 0, ?, ?, ?)`,
  );
  return {
    insert: async (rows) => {
      sqlite.transaction(() => {
        for (const r of rows) insert.run(r.subscriber, `ref-${serial}`, webhookId(), r.at, r.at, r.at);
      })();
    },
    rows: async () =>
      sqlite
        .prepare('SELECT id, state, attempts, lease_owner AS owner FROM deliveries ORDER BY id')
        .all() as Awaited<ReturnType<DeliveriesHarness['rows']>>,
    outcomes: async () =>
      sqlite
        .prepare(`SELECT id, next_attempt_at, ${OUTCOME_COLUMNS} FROM deliveries ORDER BY id`)
        .all() as DeliveryOutcomeColumns[],
    reset: async () => {
      sqlite.exec('DELETE FROM deliveries');
    },
  };
}

export function postgresDeliveries(pool: pg.Pool): DeliveriesHarness {
  return {
    insert: async (rows) => {
      const ids = rows.map(() => webhookId());
      await pool.query(
        `INSERT INTO deliveries (subscriber, event_type, ref, webhook_id, body, state, attempts, next_attempt_at, created_at, updated_at)
         SELECT s, 'operation.accepted', 'ref-' || w, w, '{}', 'pending', 0, a, a, a
         FROM unnest($1::text[], $2::text[], $3::timestamptz[]) WITH ORDINALITY AS r(s, w, a, n) ORDER BY n`,
        [rows.map((r) => r.subscriber), ids, rows.map((r) => r.at)],
      );
    },
    rows: async () =>
      (
        await pool.query<{ id: number; state: string; attempts: number; owner: string | null }>(
          'SELECT id::float8 AS id, state, attempts, lease_owner AS owner FROM deliveries ORDER BY id',
        )
      ).rows,
    outcomes: async () => {
      const iso = (c: string) => `to_char(${c} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS ${c}`;
      const { rows } = await pool.query<DeliveryOutcomeColumns>(
        `SELECT id::float8 AS id, state, last_status, last_error, ${iso('next_attempt_at')}, ${iso('lease_until')},
           ${iso('delivered_at')}, ${iso('dead_at')} FROM deliveries ORDER BY id`,
      );
      return rows;
    },
    reset: async () => {
      await pool.query('TRUNCATE deliveries RESTART IDENTITY');
    },
  };
}
