import { postgresScriptStore } from '../../src/postgres/scripts.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { scriptStoreCases } from './scriptStore.cases.js';

/** The script store's contract on PostgreSQL, the file's database emptied before each case. */

const pg = useTestPgDatabase();

scriptStoreCases('postgres', async () => {
  await pg.db.pool.query('TRUNCATE daemon_state, webhook_rejections, changes');
  return {
    store: postgresScriptStore(pg.db.pool),
    feed: async () =>
      (
        await pg.db.pool.query<{ v: string }>(
          "SELECT resource || ' ' || record_id || ' ' || kind AS v FROM changes ORDER BY seq",
        )
      ).rows.map((r) => r.v),
    close: async () => {},
  };
});
