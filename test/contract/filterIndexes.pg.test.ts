import { afterEach, inject } from 'vitest';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { filterIndexesCases } from './filterIndexes.cases.js';
import { type MirrorUnderTest, pgMirror } from './mirrorStores.js';

/**
 * The filter indexes' contract on PostgreSQL, a fresh database per case (a `vcu-sync` child gets
 * its URL). Its catalog: `pg_indexes.indexdef`, the whole definition as the server would dump it,
 * and the columns in order from `pg_index`.
 */

const cluster = inject('postgres');

let database: TestDatabase | undefined;
let store: PgDatabase | undefined;
afterEach(async () => {
  await store?.close();
  await database?.drop();
  store = undefined;
  database = undefined;
});

async function definitions(m: MirrorUnderTest, table: string) {
  const rows = await m.query(
    `SELECT i.indexname AS name, i.indexdef AS text,
       (SELECT array_agg(a.attname::text ORDER BY k.n) FROM pg_index x
          CROSS JOIN LATERAL unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, n)
          JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum
         WHERE x.indexrelid = (quote_ident(i.schemaname) || '.' || quote_ident(i.indexname))::regclass) AS columns
     FROM pg_indexes i WHERE i.schemaname = current_schema() AND i.tablename = $1`,
    [table],
  );
  const out: Record<string, { columns: string[]; text: string }> = {};
  for (const r of rows) out[String(r.name)] = { columns: r.columns as string[], text: String(r.text) };
  return out;
}

filterIndexesCases('postgres', {
  async open() {
    database = await createTestDatabase(cluster);
    store = await openPostgres(database.url, { max: 4 });
    return pgMirror(store);
  },
  childEnv: () => ({ VCU_SYNC_DATABASE_URL: database!.url }),
  definitions,
});
