import { sqliteReconcileStore } from './reconcileStores.js';
import { reconciliationCases } from './reconciliation.cases.js';
import { reconciliationRetireCases } from './reconciliationRetire.cases.js';

/** The reconciliation's findings on SQLite, a temp file per case: no PostgreSQL needed. */

reconciliationCases('sqlite', async () => sqliteReconcileStore());
reconciliationRetireCases('sqlite', async () => sqliteReconcileStore());
