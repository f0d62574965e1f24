import { sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * One row per running daemon sharing the database (on SQLite only ever the one that owns the
 * file; on PostgreSQL every replica): who it is, since when, its last heartbeat, and what it holds.
 */
export const replicas = sqliteTable('replicas', {
  /** The lease owner its claims carry (unique per process). */
  lease_owner: text('lease_owner').primaryKey(),
  /** The instance name it runs as. */
  name: text('name').notNull(),
  started_at: text('started_at').notNull(),
  last_heartbeat_at: text('last_heartbeat_at').notNull(),
  /** What it runs, comma-separated (e.g. `outbox,mirror`). */
  holds: text('holds').notNull(),
});
