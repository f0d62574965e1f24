import type pg from 'pg';
import { postgresScriptStore } from '../../src/postgres/scripts.js';
import { deliveriesPrune } from '../../src/subscribers/prune.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { columns, deliveriesPruneCases, type PruneHarness } from './deliveriesPrune.cases.js';

/** The deliveries prune's contract on PostgreSQL, the file's database emptied before each case. */

function pgHarness(pool: pg.Pool): PruneHarness {
  return {
    insert: async (rows) => {
      const cols = rows.map(columns);
      await pool.query(
        `INSERT INTO deliveries (subscriber, event_type, ref, webhook_id, body, state, attempts, next_attempt_at,
           created_at, updated_at, delivered_at, dead_at, lease_owner)
         SELECT s, 'operation.accepted', 'ref', w, '{}', st, 1, c, c, c, d, x, o
         FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::timestamptz[], $7::text[])
           WITH ORDINALITY AS r(s, w, st, c, d, x, o, n) ORDER BY n`,
        [0, 1, 2, 3, 4, 5, 6].map((i) => cols.map((c) => c[i])),
      );
    },
    left: async () =>
      (
        await pool.query<{ subscriber: string; state: string }>(
          'SELECT subscriber, state FROM deliveries ORDER BY id',
        )
      ).rows,
    exec: async (sql) => {
      await pool.query(sql);
    },
  };
}

const pgDb = useTestPgDatabase();

deliveriesPruneCases('postgres', async () => {
  await pgDb.db.pool.query('TRUNCATE deliveries RESTART IDENTITY');
  return {
    h: pgHarness(pgDb.db.pool),
    pruneDeliveries: deliveriesPrune(postgresScriptStore(pgDb.db.pool)),
    close: async () => {},
  };
});
