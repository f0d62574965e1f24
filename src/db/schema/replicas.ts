import { type ColumnKinds, type ColumnTypes, table } from './kinds.js';

/**
 * One row per running daemon sharing the database (on SQLite only ever the one that owns the
 * file; on PostgreSQL every replica): who it is, since when, its last heartbeat, and what it holds.
 */
export const replicasTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  table('replicas', {
    /** The lease owner its claims carry (unique per process). */
    lease_owner: k.key(),
    /** The instance name it runs as. */
    name: k.text().notNull(),
    started_at: k.at().notNull(),
    last_heartbeat_at: k.at().notNull(),
    /** What it runs, comma-separated (e.g. `outbox,mirror`). */
    holds: k.text().notNull(),
  });
