import { errorMessage } from '../common/errors.js';
import type { AppContext } from '../context.js';
import type { IndexSpec } from '../db/schema/kinds.js';
import { FILTER_INDEXES } from '../db/schema/mirror.js';
import { run, type Script } from '../store/script.js';
import { indexCatalog, raw, type Sql, sql } from '../store/sql.js';
import type { MirrorBackend } from './backend.js';
import { listResources, type TableDef } from './resources.js';
import { quoteIdent } from './statements.js';
import type { MirrorDb } from './store.js';

/**
 * A mirror table's filter indexes (the API's, never the key or `_position`, which the sync's own
 * lookups, upserts and overlap check go by) are built after a first full load rather than kept up
 * row by row: into an empty table, every row lands at a random place in each of them, which made
 * the seconds per million records of a first `sync units` grow with the mirror; one sort per index
 * at the end costs a fraction of that (docs/benchmarks.md, "Filter indexes after a first load").
 *
 * While they are missing, GET /v1/units still answers every filter correctly, by scanning the
 * table instead of walking an index: slower on a large mirror, never wrong. A run killed mid-load
 * leaves them missing: the next run (at its start) or the mirror's start puts them back, under the
 * resource's run right (SQLite's single writer, PostgreSQL's advisory lock: one replica at a time),
 * with `CREATE INDEX IF NOT EXISTS` and the definitions the migrations gave them (this file spells
 * their DDL from db/schema/mirror.ts, the list drizzle builds them from).
 */

/**
 * Whether every mirror table's filter indexes are in place: not during a first load or after one
 * was killed. A reader whose statements go by them (the reconciliation's, by issuance and status)
 * waits meanwhile rather than scan the table; on SQLite such a read holds the API's loop.
 */
export async function filterIndexesReady(db: Pick<MirrorDb, 'read'>): Promise<boolean> {
  for (const table of Object.keys(FILTER_INDEXES))
    if ((await missingIndexes(db, table)).length > 0) return false;
  return true;
}

/** The filter indexes of a mirror table (none for most). */
export const filterIndexes = (table: string): readonly IndexSpec<string>[] => FILTER_INDEXES[table] ?? [];

/** The index as the migrations create it, if it is not there. */
export const createIndex = (table: string, spec: IndexSpec<string>): Sql =>
  raw(
    `CREATE ${spec.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS ${quoteIdent(spec.name)} ON ${quoteIdent(table)} (${spec.on.map(quoteIdent).join(', ')})${spec.where === undefined ? '' : ` WHERE ${spec.where}`}`,
  );

export const dropIndex = (spec: IndexSpec<string>): Sql =>
  raw(`DROP INDEX IF EXISTS ${quoteIdent(spec.name)}`);

/** The names of `table`'s indexes, from the store's catalog. */
export const indexNames = (table: string): Sql =>
  sql`SELECT name FROM ${indexCatalog} AS i WHERE i.tbl = ${table}`;

/** Whether the table holds any row at all (removed ones too). */
const anyRow = (table: string) => sql`SELECT EXISTS (SELECT 1 FROM ${raw(quoteIdent(table))}) AS found`;

/** Which of `table`'s filter indexes the store does not have now (`db`: any reader of the store). */
export async function missingIndexes(
  db: Pick<MirrorDb, 'read'>,
  table: string,
): Promise<IndexSpec<string>[]> {
  const specs = filterIndexes(table);
  if (specs.length === 0) return [];
  const present = new Set((await db.read<{ name: string }>(indexNames(table))).map((r) => r.name));
  return specs.filter((s) => !present.has(s.name));
}

/**
 * Creates `specs` on `table`, one transaction each, so SQLite's write lock is let go between two
 * (an enqueue waiting on it gets in), and logs how long it took.
 */
async function build(
  ctx: AppContext,
  db: MirrorDb,
  table: string,
  specs: readonly IndexSpec<string>[],
  why: 'first-load' | 'restored',
): Promise<void> {
  const started = ctx.clock.now();
  for (const spec of specs) await db.write(run(createIndex(table, spec)));
  const ms = ctx.clock.now() - started;
  ctx.log.info(
    { event: 'mirror.indexes.built', table, indexes: specs.map((s) => s.name), why, ms },
    why === 'first-load'
      ? `built ${table}'s filter indexes after its first load in ${ms} ms`
      : `put back ${table}'s filter indexes a stopped first load left missing, in ${ms} ms`,
  );
}

function* dropAll(specs: readonly IndexSpec<string>[], fence?: () => Script<void>): Script<void> {
  if (fence) yield* fence();
  for (const spec of specs) yield* run(dropIndex(spec));
}

/** What a run does with the table's filter indexes once its scan has ended. */
export interface DeferredIndexes {
  /** Builds them (before the run is marked finished). */
  build(): Promise<void>;
}

/**
 * At the start of a list run, its right held (`fence`: its lease's): a full scan into an empty
 * table drops the filter indexes and returns what builds them after the load; otherwise any a
 * killed first load left missing are put back now, and null is returned.
 */
export async function prepareFilterIndexes(
  ctx: AppContext,
  db: MirrorDb,
  def: TableDef,
  mode: 'full' | 'incremental',
  fence?: () => Script<void>,
): Promise<DeferredIndexes | null> {
  const specs = filterIndexes(def.table);
  if (specs.length === 0) return null;
  const missing = await missingIndexes(db, def.table);
  const empty = !(await db.read<{ found: unknown }>(anyRow(def.table)))[0]?.found;
  if (mode !== 'full' || !empty) {
    if (missing.length > 0) await build(ctx, db, def.table, missing, 'restored');
    return null;
  }
  await db.write(
    dropAll(
      specs.filter((s) => !missing.includes(s)),
      fence,
    ),
  );
  ctx.log.info(
    { event: 'mirror.indexes.deferred', table: def.table, indexes: specs.map((s) => s.name) },
    `first load of ${def.table}: its filter indexes are built once its rows are in`,
  );
  return { build: () => build(ctx, db, def.table, specs, 'first-load') };
}

/**
 * When the mirror starts: puts back the filter indexes a killed first load left missing, for each
 * resource whose run right is free (a run live elsewhere builds them at its end). Never throws: a
 * failure is logged, and the next run of the resource tries again.
 */
export async function restoreFilterIndexes(ctx: AppContext, backend: MirrorBackend): Promise<void> {
  for (const resource of Object.values(listResources(ctx.config))) {
    if (filterIndexes(resource.table).length === 0) continue;
    try {
      const acquired = await backend.lock.acquire(ctx, resource.name);
      if (!acquired.ok) continue;
      try {
        const missing = await missingIndexes(backend.db, resource.table);
        if (missing.length > 0) await build(ctx, backend.db, resource.table, missing, 'restored');
      } finally {
        await acquired.lease.release();
      }
    } catch (err) {
      ctx.log.warn(
        { event: 'mirror.indexes.failed', table: resource.table, error: errorMessage(err) },
        `${resource.table}'s filter indexes not put back; the next run of ${resource.name} tries again`,
      );
    }
  }
}
