/**
 * Every PostgreSQL advisory lock vcu-sync takes, in one registry: its key, and who holds it for
 * how long. Keys are SQL expressions (bigint), so a reader of `pg_locks` (health's liveness and
 * run-lock checks) derives them exactly as the holder does. No `pg` import: SQLite processes load
 * this file too (the deliveries' sink names the feed's lock in a statement SQLite skips).
 *
 * | lock | key | held |
 * |---|---|---|
 * | migrations | {@link MIGRATION_LOCK_KEY} | session, while one process migrates (postgres/open.ts) |
 * | change feed | {@link FEED_LOCK_KEY} | transaction, from a feed append to its commit (postgres/changes.ts) |
 * | reconciliation pass | {@link RECONCILE_LOCK_KEY} | transaction, one pass's writes (reconcile/pass.ts) |
 * | order key | {@link orderKeyLock} | transaction, an enqueue of that unit (operations/transitions.ts) |
 * | replica liveness | {@link livenessLock} | session, for the replica's life (postgres/liveness.ts) |
 * | sync run | {@link syncRunLock} | session, for one resource's sync run (postgres/mirror.ts) |
 */

/** "vcu-sync" in ASCII: several replicas starting at once migrate one after the other. */
export const MIGRATION_LOCK_KEY = '8530790957241167459';

/** The change feed's single writer (postgres/changes.ts says why). A fixed key shared by every replica, so never changed. */
export const FEED_LOCK_KEY = '8530790981548027495';

/**
 * "vcurecon" in ASCII: replicas' reconciliation passes write one after the other, each settling its
 * findings against the rows the one before it committed. Not the feed's lock: a pass writing its
 * findings held that one across its round trips, and every settle of the drain waited behind it.
 */
export const RECONCILE_LOCK_KEY = '8530791253357588334';

/** An order key's lock, from the SQL expression giving the key: ids of one unit in commit order. */
export const orderKeyLock = (orderKey: string) => `hashtextextended(${orderKey}, 0)`;

/** A replica's liveness lock, from the SQL expression giving its lease owner. */
export const livenessLock = (owner: string) => `hashtextextended(${owner}, 0)`;

/** A resource's sync run lock, from the SQL expression giving the resource. */
export const syncRunLock = (resource: string) => `hashtextextended('vcu-sync sync ' || ${resource}, 0)`;
