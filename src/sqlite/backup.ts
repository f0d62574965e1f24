import { existsSync, renameSync, rmSync } from 'node:fs';
import Database from 'better-sqlite3';
import { UserError } from '../common/errors.js';
import { createPrivateFile } from './fileMode.js';
import type { Sqlite } from './open.js';

/** What a backup wrote. */
export interface BackupResult {
  file: string;
  pages: number;
  /** Rows per table in the copy, to show it is whole. */
  tables: Record<string, number>;
}

/** Removes a database file's WAL and shared-memory files, if any. */
function removeSidecars(file: string): void {
  for (const suffix of ['-wal', '-shm', '-journal']) rmSync(`${file}${suffix}`, { force: true });
}

/**
 * Copies the live database to `target` with SQLite's online backup API, which takes consistent
 * snapshots while the daemon keeps writing. Writes a temporary file first and renames it, so a
 * failed backup never leaves a half file under the name asked for; an existing file is not replaced.
 * The copy is switched out of WAL mode: a backup is one self-contained file, and opening it (to
 * check it here, or later to read it) leaves no `-wal`/`-shm` beside it for the backup timer's
 * clean-up to miss.
 */
export async function backupDatabase(source: Sqlite, target: string): Promise<BackupResult> {
  if (existsSync(target)) throw new UserError(`backup: ${target} exists already; choose a new file name`);
  const partial = `${target}.partial-${process.pid}`;
  let pages = 0;
  try {
    // A copy of the database holds what it holds: created private, not 0644 by SQLite.
    createPrivateFile(partial);
    const result = await source.backup(partial);
    pages = result.totalPages;
  } catch (err) {
    rmSync(partial, { force: true });
    removeSidecars(partial);
    throw new UserError(`backup: cannot write ${target}: ${(err as Error).message}`);
  }
  const copy = new Database(partial);
  try {
    // The copy carries the live database's WAL flag; DELETE mode checkpoints and removes the sidecars.
    copy.pragma('journal_mode = DELETE');
    const check = copy.pragma('quick_check', { simple: true });
    if (check !== 'ok') throw new UserError(`backup: the copy failed its integrity check: ${String(check)}`);
    const tables: Record<string, number> = {};
    const names = copy
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
      )
      .pluck()
      .all() as string[];
    for (const name of names) {
      tables[name] = copy.prepare(`SELECT count(*) FROM "${name}"`).pluck().get() as number;
    }
    copy.close();
    removeSidecars(partial);
    renameSync(partial, target);
    return { file: target, pages, tables };
  } catch (err) {
    if (copy.open) copy.close();
    rmSync(partial, { force: true });
    removeSidecars(partial);
    throw err;
  }
}
