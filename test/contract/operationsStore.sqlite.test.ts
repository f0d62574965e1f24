import { operationsStoreCases } from './operationsStore.cases.js';
import { sqliteOperationsHarness } from './operationsStores.js';

/** The operations store seam's contract on SQLite, a temp file per case: no PostgreSQL needed. */

operationsStoreCases('sqlite', async () => sqliteOperationsHarness());
