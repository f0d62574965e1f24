import { readFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { MIGRATIONS_FOLDER } from '../../src/sqlite/migrations.js';
import { tempDir, testContext } from '../helpers/context.js';

/**
 * sync_seen is a WITHOUT ROWID table on SQLite (drizzle/0010, written by hand): one b-tree per seen
 * key instead of a row and an index entry. The migration keeps the keys of a scan in progress.
 */
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

describe('sync_seen without rowid', () => {
  it('is what a new database gets, with the columns and key drizzle declares', () => {
    const ctx = testContext();
    cleanups.push(ctx.dispose);
    const db = ctx.database.sqlite;
    const { sql } = db.prepare(`SELECT sql FROM sqlite_master WHERE name = 'sync_seen'`).get() as {
      sql: string;
    };
    expect(sql).toMatch(/WITHOUT ROWID$/);
    expect(db.prepare(`SELECT name, pk FROM pragma_table_info('sync_seen') ORDER BY cid`).all()).toEqual([
      { name: 'resource', pk: 1 },
      { name: 'record_id', pk: 2 },
    ]);
    db.prepare(`INSERT INTO sync_seen VALUES ('units', 'a'), ('units', 'b')`).run();
    expect(() => db.prepare(`INSERT INTO sync_seen VALUES ('units', 'a')`).run()).toThrow(/UNIQUE/);
  });

  it("keeps the keys of a scan in progress when it migrates an older database's table", () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const db = new Database(path.join(dir, 'old.db'));
    cleanups.unshift(() => db.close());
    db.exec(
      `CREATE TABLE sync_seen (resource text NOT NULL, record_id text NOT NULL, PRIMARY KEY(resource, record_id))`,
    );
    const insert = db.prepare('INSERT INTO sync_seen VALUES (?, ?)');
    for (let i = 0; i < 500; i++) insert.run(i % 2 ? 'unit_operations' : 'projects', `k${i}`);
    const before = db.prepare('SELECT * FROM sync_seen ORDER BY 1, 2').all();
    const migration = readFileSync(path.join(MIGRATIONS_FOLDER, '0010_sync_seen_without_rowid.sql'), 'utf8');
    db.transaction(() => {
      for (const statement of migration.split('--> statement-breakpoint')) db.exec(statement);
    })();
    expect(db.prepare('SELECT * FROM sync_seen ORDER BY 1, 2').all()).toEqual(before);
    expect(
      (db.prepare(`SELECT sql FROM sqlite_master WHERE name = 'sync_seen'`).get() as { sql: string }).sql,
    ).toMatch(/WITHOUT ROWID$/);
  });
});
