import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { postgresReconcileStore } from './reconcileStores.js';
import { reconciliationCases } from './reconciliation.cases.js';
import { reconciliationRetireCases } from './reconciliationRetire.cases.js';

/** The reconciliation's findings on PostgreSQL, the file's database emptied before each case. */

const pg = useTestPgDatabase();

reconciliationCases('postgres', () => postgresReconcileStore(pg.db));
reconciliationRetireCases('postgres', () => postgresReconcileStore(pg.db));
