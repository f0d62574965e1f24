import { existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { UserError } from '../common/errors.js';
import { createPrivateFile } from './fileMode.js';
import { applyMigrations, pendingMigrations } from './migrations.js';

export type Sqlite = Database.Database;

/** An open database: the raw handle; every query is a prepared statement on it. */
export interface OpenDatabase {
  sqlite: Sqlite;
  path: string;
  close(): void;
}

/** Options of {@link openDatabase}. */
export interface OpenOptions {
  /** Apply pending migrations (default: true). */
  migrate?: boolean;
  /** Open read-only, e.g. for `vcu-sync status` (default: false). */
  readonly?: boolean;
  /** SQLite `synchronous` (default: "full"). */
  synchronous?: 'full' | 'normal';
  /** Lock wait in milliseconds (default: 5000). */
  busyTimeoutMs?: number;
}

/**
 * SQLite's page cache per connection, KiB. better-sqlite3 builds SQLite with 16 MiB; the mirror's
 * writes are appends and key lookups that the OS page cache serves as well. On a 1,000,000-record
 * sync the 16 MiB cache alone was ~10 MB of the process's peak RSS, and 4 MiB a further 6-8 MB over
 * 1 MiB (`npm run bench -- --only rss`: 114 MB against 121-124), with no measurable speed-up either
 * time: the full sync, the re-sync and the drain measured the same (docs/benchmarks.md, "Issue 30,
 * fifth round").
 */
const PAGE_CACHE_KIB = 1024;

function openProblem(file: string, err: unknown): UserError {
  const code = (err as NodeJS.ErrnoException).code;
  const dir = path.dirname(path.resolve(file));
  if (!existsSync(dir)) return new UserError(`database: cannot open ${file}: folder ${dir} does not exist`);
  if (existsSync(file) && statSync(file).isDirectory())
    return new UserError(`database: ${file} is a folder, not a file`);
  const reason = (err as Error).message || code || 'unknown error';
  return new UserError(`database: cannot open ${file}: ${reason}`);
}

/**
 * Opens the SQLite file with the pragmas every process needs (WAL so readers never block the
 * writer, a busy timeout, foreign keys) and, unless told otherwise, brings the schema up to date.
 */
export function openDatabase(file: string, options: OpenOptions = {}): OpenDatabase {
  if (!options.readonly) {
    const dir = path.dirname(path.resolve(file));
    // Only create the last folder level: a wrong deeper path should be an error, not a surprise tree.
    if (!existsSync(dir) && existsSync(path.dirname(dir))) mkdirSync(dir);
  }
  let sqlite: Sqlite;
  try {
    // Created here rather than by SQLite, which would make it 0644: it holds operations and personal data.
    if (!options.readonly) createPrivateFile(file);
    sqlite = new Database(file, {
      readonly: options.readonly ?? false,
      fileMustExist: options.readonly ?? false,
    });
    sqlite.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    sqlite.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
    if (!options.readonly) {
      sqlite.pragma('journal_mode = WAL');
      sqlite.pragma(`synchronous = ${(options.synchronous ?? 'full').toUpperCase()}`);
      // Freed space is zeroed, not left holding old row versions: every update of an outbox row
      // rewrites its whole record, personal fields included, and the retention scrub must leave no
      // copy in the file (outbox/scrub.ts). ON, not FAST: FAST leaves freed overflow pages as they were.
      sqlite.pragma('secure_delete = ON');
    }
    sqlite.pragma('foreign_keys = ON');
  } catch (err) {
    throw openProblem(file, err);
  }
  if (options.migrate ?? !options.readonly) {
    try {
      // Checked first so that a current database never loads drizzle (src/sqlite/migrations.ts).
      if (pendingMigrations(sqlite) > 0) applyMigrations(sqlite);
    } catch (err) {
      sqlite.close();
      throw new UserError(`database: migration failed on ${file}: ${(err as Error).message}`);
    }
  }
  return {
    sqlite,
    path: file,
    close() {
      if (!sqlite.open) return;
      if (!sqlite.readonly) {
        // Fold the WAL back so a copied file alone is complete.
        try {
          sqlite.pragma('wal_checkpoint(TRUNCATE)');
        } catch {
          // Another connection may hold the WAL; it will checkpoint later.
        }
      }
      sqlite.close();
    },
  };
}
