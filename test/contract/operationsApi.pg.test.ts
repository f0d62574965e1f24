import { inject } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { openPostgres } from '../../src/postgres/open.js';
import { pgOutbox } from '../../src/postgres/operationsStore.js';
import { testContext } from '../helpers/context.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { operationsApiCases, T0, TOKEN } from './operationsApi.cases.js';
import { serveApi } from './serveApi.js';

/**
 * The API operations routes' contract on PostgreSQL (`outbox`, pgAccess.ts), a database of the
 * file's own; each step also asked of an API on SQLite's outbox over the same context (one clock),
 * which must answer the same bytes.
 */

const cluster = inject('postgres');

operationsApiCases('PostgreSQL', async () => {
  const clock = new ManualClock(T0);
  const ctx = testContext({ clock, overrides: { 'api.listen': '127.0.0.1:0', 'api.token': TOKEN } });
  const database = await createTestDatabase(cluster);
  const store = await openPostgres(database.url);
  const { pool } = store;
  const onSqlite = await serveApi(ctx, {}, TOKEN);
  const outbox = pgOutbox(ctx, pool, {});
  const onPostgres = await serveApi(ctx, { outbox }, TOKEN);
  return {
    clock,
    side: { call: onPostgres.call, exec: async (sql) => void (await pool.query(sql)) },
    reference: { call: onSqlite.call, exec: async (sql) => void ctx.database.sqlite.exec(sql) },
    close: async () => {
      await onSqlite.stop();
      await onPostgres.stop();
      await store.close();
      await database.drop();
      ctx.dispose();
    },
  };
});
