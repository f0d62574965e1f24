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

let shipped: number[] | undefined;

/** The `when` of every migration this build ships, from drizzle-kit's journal. */
function shippedMigrations(): number[] {
  shipped ??= (
    JSON.parse(readFileSync(path.join(MIGRATIONS_FOLDER, 'meta/_journal.json'), 'utf8')) as Journal
  ).entries.map((e) => e.when);
  return shipped;
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
  return shippedMigrations().filter((when) => when > newest).length;
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
