import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { operationsStoreCases } from './operationsStore.cases.js';
import { postgresOperationsHarness } from './operationsStores.js';

/** The operations store seam's contract on PostgreSQL, the file's database emptied before each case. */

const pg = useTestPgDatabase();

operationsStoreCases('postgres', async () => {
  const h = postgresOperationsHarness(pg.db);
  await h.reset();
  return h;
});
