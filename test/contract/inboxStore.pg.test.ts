import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { inboxStoreCases } from './inboxStore.cases.js';
import { postgresInboxHarness } from './inboxStores.js';

/** The inbox store seam's contract on PostgreSQL, the file's database emptied before each case. */

const pg = useTestPgDatabase();

inboxStoreCases('postgres', async () => {
  const h = postgresInboxHarness(pg.db);
  await h.reset();
  return h;
});
