import { deliveriesStoreCases, sqliteDeliveriesUnderTest } from './deliveriesStore.cases.js';

/** The deliveries store seam's contract on SQLite, a temp file per case: no PostgreSQL needed. */

deliveriesStoreCases('sqlite', sqliteDeliveriesUnderTest);
