import { expect, inject } from 'vitest';
import { openPostgres } from '../../src/postgres/open.js';
import { postgresScriptStore } from '../../src/postgres/scripts.js';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { testContext } from '../helpers/context.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { passAt, writeBook } from './reconciliationBook.js';
import { reconciliationRoutesCases, TOKEN } from './reconciliationRoutes.cases.js';
import { serveApi } from './serveApi.js';

/**
 * `GET /v1/reconciliation`'s contract over PostgreSQL, the same book written and reconciled in a
 * SQLite file beside it, whose API must answer the same bytes. The database is collated for people
 * (ICU `en-US`, where `iss-lower` sorts before `ISS-P01`): the sheets must still come in SQLite's
 * byte order, and the pages with them.
 */

const cluster = inject('postgres');

reconciliationRoutesCases('PostgreSQL (ICU en-US), answering as SQLite does', async () => {
  expect(cluster).toBeDefined();
  const ctx = testContext({ overrides: { 'api.listen': '127.0.0.1:0', 'api.token': TOKEN } });
  const database = await createTestDatabase(cluster, { icuLocale: 'en-US' });
  const pg = await openPostgres(database.url, { max: 4 });
  const onPg = postgresScriptStore(pg.pool);
  const onSqlite = commitQueueFor(ctx.database.sqlite);
  const now = Date.parse('2026-03-10T00:00:00Z');
  for (const store of [onSqlite, onPg]) {
    await writeBook(store, now);
    await passAt(store, now);
  }
  const reference = await serveApi(ctx, {}, TOKEN);
  const underTest = await serveApi(ctx, { reconciliation: onPg }, TOKEN);
  return {
    call: underTest.call,
    reference: reference.call,
    stores: [onPg, onSqlite],
    now,
    close: async () => {
      await reference.stop();
      await underTest.stop();
      await pg.close();
      await database.drop();
      ctx.dispose();
    },
  };
});
