import { inboxStoreCases } from './inboxStore.cases.js';
import { sqliteInboxHarness } from './inboxStores.js';

/** The inbox store seam's contract on SQLite, a temp file per case: no PostgreSQL needed. */

inboxStoreCases('sqlite', async () => sqliteInboxHarness());
