import { pgTable, text } from 'drizzle-orm/pg-core';
import { at } from './columns.js';

/** One row per running replica (see ../schema/replicas.ts). */
export const replicas = pgTable('replicas', {
  lease_owner: text('lease_owner').primaryKey(),
  name: text('name').notNull(),
  started_at: at('started_at').notNull(),
  last_heartbeat_at: at('last_heartbeat_at').notNull(),
  holds: text('holds').notNull(),
});
