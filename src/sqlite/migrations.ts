import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type Database from 'better-sqlite3';

/**
 * The SQLite schema's migrations: drizzle-kit writes them from src/db/schema into drizzle/, and
 * drizzle's migrator applies them. drizzle-orm is loaded only when one is pending: as ES modules
 * its import alone took a one-shot command such as `vcu-sync status` to ~250 MB of peak RSS (Node
 * linking its `export *` cycles), and every query the process makes is a raw prepared statement.
 */

/** The drizzle migrations folder, found from this file in both src/ and dist/. */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../drizzle', import.meta.url));

interface Journal {
  entries: { tag: string; when: number }[];
}

const shipped = new Map<string, number[]>();

/** The `when` of every migration this build ships in `folder`, from drizzle-kit's journal. */
function shippedMigrations(folder: string): number[] {
  let whens = shipped.get(folder);
  if (whens === undefined) {
    whens = (
      JSON.parse(readFileSync(path.join(folder, 'meta/_journal.json'), 'utf8')) as Journal
    ).entries.map((e) => e.when);
    shipped.set(folder, whens);
  }
  return whens;
}

/**
 * How many migrations shipped in `folder` are newer than `newest`, the newest `created_at` of
 * `__drizzle_migrations` (-Infinity when none): what drizzle's migrator would run (the PostgreSQL
 * schema's folder is postgres/open.ts PG_MIGRATIONS_FOLDER).
 */
export function migrationsNewerThan(newest: number, folder: string = MIGRATIONS_FOLDER): number {
  return shippedMigrations(folder).filter((when) => when > newest).length;
}

/**
 * Migrations shipped with this build that the database has not applied, by drizzle's own rule:
 * its migrator applies every migration newer than the newest row of `__drizzle_migrations` (whose
 * `created_at` is the journal's `when`), so this counts exactly what `migrate()` would run.
 */
export function pendingMigrations(sqlite: Database.Database): number {
  let newest = -Infinity;
  try {
    newest = Number(
      sqlite.prepare('SELECT max(created_at) FROM __drizzle_migrations').pluck().get() ?? -Infinity,
    );
  } catch {
    // No migrations table: nothing applied.
  }
  return migrationsNewerThan(newest);
}

/**
 * Applies pending migrations with drizzle's migrator. Its CommonJS build, `require()`d: this runs
 * inside the synchronous openDatabase, and it peaks at ~63 MB of RSS where the ES build reaches ~270.
 */
export function applyMigrations(sqlite: Database.Database): void {
  const require = createRequire(import.meta.url);
  const { drizzle } = require('drizzle-orm/better-sqlite3') as typeof import('drizzle-orm/better-sqlite3');
  const { migrate } =
    require('drizzle-orm/better-sqlite3/migrator') as typeof import('drizzle-orm/better-sqlite3/migrator');
  migrate(drizzle(sqlite), { migrationsFolder: MIGRATIONS_FOLDER });
}
