import type { deliveries, outbox, outboxAttempts } from './sqlite.js';

/**
 * Rows as both adapters read them back: the SQLite table's types (ISO text times, numeric ids),
 * the forms PostgreSQL's rows are turned into (src/postgres/scripts.ts). The domains take their
 * row types from here, not from a dialect's schema.
 */
export type OutboxRecord = typeof outbox.$inferSelect;
export type OutboxAttemptRecord = typeof outboxAttempts.$inferSelect;
export type DeliveryRecord = typeof deliveries.$inferSelect;
