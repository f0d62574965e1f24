import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { backupDatabase } from '../../src/sqlite/backup.js';
import { openDatabase } from '../../src/sqlite/open.js';
import { tempDir } from '../helpers/context.js';

const mode = (file: string) => (statSync(file).mode & 0o777).toString(8);

describe('database files hold operations and personal data: created private', () => {
  const cleanups: Array<() => void> = [];
  const umaskBefore = process.umask();
  afterEach(() => {
    process.umask(umaskBefore);
    for (const c of cleanups.splice(0)) c();
  });

  for (const [umask, expected] of [
    [0o022, '600'],
    [0o027, '640'],
  ] as const) {
    it(`under umask ${umask.toString(8).padStart(4, '0')}: the database, its -wal and -shm, and a backup are ${expected}`, async () => {
      const { dir, cleanup } = tempDir();
      cleanups.push(cleanup);
      process.umask(umask);
      const file = path.join(dir, 'vcu.db');
      const database = openDatabase(file);
      try {
        database.sqlite.exec(
          "INSERT INTO sync_runs (resource, mode, trigger, started_at, status) VALUES ('projects', 'full', 'manual', 'x', 'failed')",
        );
        expect(existsSync(`${file}-wal`)).toBe(true);
        expect(existsSync(`${file}-shm`)).toBe(true);
        expect({ db: mode(file), wal: mode(`${file}-wal`), shm: mode(`${file}-shm`) }).toEqual({
          db: expected,
          wal: expected,
          shm: expected,
        });
        const backup = path.join(dir, 'backup.db');
        await backupDatabase(database.sqlite, backup);
        expect(mode(backup)).toBe(expected);
      } finally {
        database.close();
      }
    });
  }
});
