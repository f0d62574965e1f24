import type { Logger } from '../log.js';
import { all, first, run, type Script } from '../store/script.js';
import { raw, sql } from '../store/sql.js';
import type { TableDef } from './resources.js';
import type { MirrorDb } from './store.js';

/**
 * A first load builds a table's secondary indexes once, after its rows, instead of inserting every
 * row at a random place in each of them. On SQLite a 300,000-record units load spent a fifth of its
 * CPU keeping `unit_operations`' five secondary indexes up to date row by row (the filter indexes'
 * entries land all over the tree, which outgrows the page cache); a CREATE INDEX after the load
 * sorts once (docs/benchmarks.md, "The unpaginated units log").
 *
 * Only on SQLite, whose file one daemon owns: on PostgreSQL other replicas read the same table
 * while it loads. Only into an empty table: a table with rows keeps its indexes, so a resumed or
 * later run never reads without them. Crash-safe: the definitions are saved in `daemon_state` in the
 * transaction that drops them, and the next run of the resource (or the end of this one, whatever
 * its outcome) creates them again from there.
 */

/** The `daemon_state` key holding a table's dropped index definitions. */
export const deferredKey = (table: string): string => `mirror.deferred_indexes.${table}`;

/** One dropped index: its name and the statement that made it (from `sqlite_master`). */
export interface DeferredIndex {
  name: string;
  sql: string;
}

/** Whether a store defers a first load's indexes (pure): SQLite's single-owner file alone. */
export function defersIndexes(db: Pick<MirrorDb, 'dialect'>): boolean {
  return !db.dialect.capabilities.sharedByProcesses;
}

/** The statement that makes a dropped index again, harmless when it exists (pure). */
export function recreateStatement(index: DeferredIndex): string {
  return index.sql.replace(
    /^\s*CREATE\s+(UNIQUE\s+)?INDEX\s+(IF\s+NOT\s+EXISTS\s+)?/i,
    'CREATE $1INDEX IF NOT EXISTS ',
  );
}

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`;

function* dropWhenEmpty(def: TableDef, at: string): Script<DeferredIndex[]> {
  const any = yield* first(sql`SELECT 1 AS one FROM ${raw(quoted(def.table))} LIMIT 1`);
  if (any) return [];
  const indexes = yield* all<DeferredIndex>(
    sql`SELECT name, sql FROM sqlite_master
        WHERE type = 'index' AND tbl_name = ${def.table} AND sql IS NOT NULL ORDER BY name`,
  );
  if (indexes.length === 0) return [];
  yield* run(
    sql`INSERT INTO daemon_state (key, value, updated_at) VALUES (${deferredKey(def.table)}, ${JSON.stringify(indexes)}, ${at})`,
  );
  for (const index of indexes) yield* run(sql`DROP INDEX ${raw(quoted(index.name))}`);
  return indexes;
}

/**
 * Drops `def`'s secondary indexes when its table is empty (SQLite only); returns how many. Call
 * {@link restoreIndexes} first, so definitions a crashed run left are never overwritten.
 */
export async function deferIndexes(db: MirrorDb, def: TableDef, at: string, log: Logger): Promise<number> {
  if (!defersIndexes(db)) return 0;
  const dropped = await db.write(dropWhenEmpty(def, at));
  if (dropped.length > 0) {
    log.info(
      { event: 'sync.indexes.deferred', table: def.table, indexes: dropped.length },
      'first load into an empty table: its indexes are built once it is loaded',
    );
  }
  return dropped.length;
}

/**
 * Creates again the indexes a deferral dropped (this run's, or a crashed one's), one transaction
 * each so the write lock is given up between them, then forgets the deferral; nothing to do (and no
 * write) when none is pending. Returns how many were built.
 */
export async function restoreIndexes(db: MirrorDb, def: TableDef, log: Logger): Promise<number> {
  if (!defersIndexes(db)) return 0;
  const key = deferredKey(def.table);
  const [pending] = await db.read<{ value: string }>(sql`SELECT value FROM daemon_state WHERE key = ${key}`);
  if (!pending) return 0;
  const indexes = JSON.parse(pending.value) as DeferredIndex[];
  for (const index of indexes) await db.write(run(raw(recreateStatement(index))));
  await db.write(run(sql`DELETE FROM daemon_state WHERE key = ${key}`));
  log.info(
    { event: 'sync.indexes.built', table: def.table, indexes: indexes.length },
    'indexes built after the load',
  );
  return indexes.length;
}
