import { mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { backupDatabase } from '../../src/sqlite/backup.js';
import { openDatabase } from '../../src/sqlite/open.js';
import { tempDir } from '../helpers/context.js';

const { dir, cleanup } = tempDir();
afterAll(cleanup);

describe('db backup leaves one file and nothing beside it', () => {
  it('copies a live WAL database into a single self-contained file, with no -wal/-shm left behind', async () => {
    const live = openDatabase(path.join(dir, 'live.db'));
    const insert = live.sqlite.prepare(
      "INSERT INTO changes (resource, record_id, kind, at) VALUES ('units', ?, 'insert', 't')",
    );
    live.sqlite.transaction(() => {
      for (let i = 0; i < 500; i++) insert.run(String(i));
    })();
    // Rows still in the live WAL (no checkpoint yet) must be in the copy too.
    expect(readdirSync(dir).sort()).toEqual(['live.db', 'live.db-shm', 'live.db-wal']);

    const backups = path.join(dir, 'backups');
    mkdirSync(backups);
    for (const name of ['vcu-sync-1.db', 'vcu-sync-2.db']) {
      const result = await backupDatabase(live.sqlite, path.join(backups, name));
      expect(result.tables.changes).toBe(500);
    }
    // What the backup timer's clean-up (`vcu-sync-*.db`) sees is all there is.
    expect(readdirSync(backups).sort()).toEqual(['vcu-sync-1.db', 'vcu-sync-2.db']);

    const copy = new Database(path.join(backups, 'vcu-sync-1.db'), { readonly: true });
    expect(copy.pragma('journal_mode', { simple: true })).toBe('delete');
    expect(copy.prepare('SELECT count(*) FROM changes').pluck().get()).toBe(500);
    copy.close();
    // Reading the copy created nothing beside it either.
    expect(readdirSync(backups).sort()).toEqual(['vcu-sync-1.db', 'vcu-sync-2.db']);
    live.close();
  });

  it('a failed backup leaves nothing behind', async () => {
    const live = openDatabase(path.join(dir, 'live2.db'));
    const target = path.join(dir, 'no-such-folder', 'copy.db');
    await expect(backupDatabase(live.sqlite, target)).rejects.toThrow(/cannot write/);
    expect(readdirSync(dir).filter((f) => f.includes('partial') || f.startsWith('no-such'))).toEqual([]);
    live.close();
  });
});
