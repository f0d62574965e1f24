import path from 'node:path';
import { ManualClock } from '../../src/common/clock.js';
import { loadConfig } from '../../src/config/config.js';
import { postgresScriptStore } from '../../src/postgres/scripts.js';
import { DeliveriesStore } from '../../src/subscribers/deliveriesStore.js';
import { testContext } from '../helpers/context.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { deliveriesAccessCases, ROWS, T0, TOKEN } from './deliveriesAccess.cases.js';
import { serveApi } from './serveApi.js';

/**
 * The deliveries routes' and CLI's contract on PostgreSQL, the file's database; every request and
 * command also asked of SQLite (an API over the same context, one clock), which must answer the
 * same. The CLI runs from `database.url` and must make no SQLite file.
 */

const pg = useTestPgDatabase();

deliveriesAccessCases('PostgreSQL', async () => {
  const clock = new ManualClock(T0);
  const ctx = testContext({ clock, overrides: { 'api.listen': '127.0.0.1:0', 'api.token': TOKEN } });
  ctx.database.sqlite.exec(ROWS);
  await pg.db.pool.query(ROWS);
  const onSqlite = await serveApi(ctx, {}, TOKEN);
  const deliveries = new DeliveriesStore(postgresScriptStore(pg.db.pool));
  const onPostgres = await serveApi(ctx, { deliveries }, TOKEN);
  const neverDb = path.join(ctx.dir, 'pg-side', 'never.db');
  return {
    clock,
    side: {
      call: onPostgres.call,
      config: loadConfig({ env: { VCU_SYNC_DB: neverDb, VCU_SYNC_DATABASE_URL: pg.database.url } }),
    },
    reference: { call: onSqlite.call, config: ctx.config },
    untouched: path.dirname(neverDb),
    close: async () => {
      await onSqlite.stop();
      await onPostgres.stop();
      ctx.dispose();
    },
  };
});
