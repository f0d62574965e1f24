import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { UserError } from '../../src/common/errors.js';
import { backupDatabase } from '../../src/sqlite/backup.js';
import { pendingMigrations } from '../../src/sqlite/migrations.js';
import { openDatabase } from '../../src/sqlite/open.js';
import { tempDir } from '../helpers/context.js';

const CONTRACT_TABLES = [
  'projects',
  'issuances',
  'unit_operations',
  'custody_projects',
  'custody_issuances',
  'custody_units',
  'changes',
  'sync_runs',
  'outbox',
  'webhook_events',
];

describe('database', () => {
  const cleanups: Array<() => void> = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });
  const dir = () => {
    const t = tempDir();
    cleanups.push(t.cleanup);
    return t.dir;
  };

  it('creates every contract table from an empty file, in WAL mode, with the interface column names', () => {
    const file = path.join(dir(), 'm.db');
    const database = openDatabase(file);
    const tables = database.sqlite.prepare("SELECT name FROM sqlite_master WHERE type='table'").pluck().all();
    expect(tables).toEqual(expect.arrayContaining(CONTRACT_TABLES));
    expect(database.sqlite.pragma('journal_mode', { simple: true })).toBe('wal');
    // 1 MiB, not better-sqlite3's 16 MiB: part of the memory budget (see PAGE_CACHE_KIB).
    expect(database.sqlite.pragma('cache_size', { simple: true })).toBe(-1024);
    const columns = database.sqlite.prepare("SELECT name FROM pragma_table_info('projects')").pluck().all();
    expect(columns).toEqual(
      expect.arrayContaining([
        'projectID',
        'projectName',
        'ProjectStatusDate',
        '_raw',
        '_first_seen_at',
        '_last_seen_at',
        '_removed_at',
      ]),
    );
    const key = database.sqlite
      .prepare("SELECT type FROM pragma_table_info('projects') WHERE pk = 1")
      .pluck()
      .get();
    expect(key).toBe('TEXT');
    database.close();
    // Opening again applies nothing twice.
    const again = openDatabase(file);
    expect(again.sqlite.prepare('SELECT count(*) FROM __drizzle_migrations').pluck().get()).toBeGreaterThan(
      0,
    );
    again.close();
  });

  it('applies the migration a database is behind on opening, and counts what is pending as drizzle does', () => {
    const file = path.join(dir(), 'behind.db');
    const fresh = new Database(file);
    const shipped = pendingMigrations(fresh);
    expect(shipped).toBeGreaterThan(0);
    fresh.close();
    const database = openDatabase(file);
    expect(pendingMigrations(database.sqlite)).toBe(0);
    // Undo the newest migration (0012: the outbox's due index made partial, of queued rows only) as
    // a database from the previous build, a queued operation in it.
    database.sqlite.exec(
      'DROP INDEX outbox_queued_due_idx; CREATE INDEX outbox_due_idx ON outbox (state, next_attempt_at)',
    );
    database.sqlite.exec(`INSERT INTO outbox ("marketplaceTransactionRef", "operationType", order_key, body,
      body_hash, state, attempts, next_attempt_at, created_at, updated_at)
      VALUES ('r1', 'Transfer', 'unit:1', '{}', 'h', 'queued', 0, 't', 't', 't')`);
    database.sqlite.exec(
      'DELETE FROM __drizzle_migrations WHERE created_at = (SELECT max(created_at) FROM __drizzle_migrations)',
    );
    expect(pendingMigrations(database.sqlite)).toBe(1);
    database.close();
    const again = openDatabase(file);
    expect(pendingMigrations(again.sqlite)).toBe(0);
    expect(again.sqlite.prepare('SELECT count(*) FROM __drizzle_migrations').pluck().get()).toBe(shipped);
    const outboxIndex = (name: string) =>
      again.sqlite
        .prepare(`SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?`)
        .pluck()
        .get(name);
    expect(outboxIndex('outbox_due_idx')).toBeUndefined();
    expect(outboxIndex('outbox_queued_due_idx')).toMatch(/\(`next_attempt_at`\) WHERE state = 'queued'$/);
    expect(
      again.sqlite.prepare('SELECT "marketplaceTransactionRef" AS ref, state FROM outbox').all(),
    ).toEqual([{ ref: 'r1', state: 'queued' }]);
    again.close();
  });

  it('is readable by another process-like connection while a writer holds a transaction', () => {
    const file = path.join(dir(), 'r.db');
    const writer = openDatabase(file);
    writer.sqlite
      .prepare("INSERT INTO changes (resource, record_id, kind, at) VALUES ('projects','1','insert','t')")
      .run();
    writer.sqlite.exec('BEGIN IMMEDIATE');
    writer.sqlite
      .prepare("INSERT INTO changes (resource, record_id, kind, at) VALUES ('projects','2','insert','t')")
      .run();
    const reader = new Database(file, { readonly: true });
    expect(reader.prepare('SELECT count(*) FROM changes').pluck().get()).toBe(1);
    writer.sqlite.exec('COMMIT');
    reader.close();
    writer.close();
  });

  it('says plainly when the folder does not exist', () => {
    const file = path.join(dir(), 'no', 'such', 'folder', 'x.db');
    expect(() => openDatabase(file)).toThrow(UserError);
    expect(() => openDatabase(file)).toThrow(/folder .* does not exist/);
  });

  it('backs up online while a writer keeps writing, and the copy holds the same rows', async () => {
    const d = dir();
    const database = openDatabase(path.join(d, 'live.db'));
    const insert = database.sqlite.prepare(
      "INSERT INTO changes (resource, record_id, kind, at) VALUES ('units', ?, 'insert', 't')",
    );
    database.sqlite.transaction(() => {
      for (let i = 0; i < 5000; i++) insert.run(String(i));
    })();
    const backup = backupDatabase(database.sqlite, path.join(d, 'copy.db'));
    insert.run('late');
    const result = await backup;
    const copy = new Database(result.file, { readonly: true });
    const live = database.sqlite.prepare('SELECT count(*) FROM changes').pluck().get() as number;
    const copied = copy.prepare('SELECT count(*) FROM changes').pluck().get() as number;
    // The copy is a consistent snapshot: all rows before the backup, and the late one only if it came first.
    expect([live, live - 1]).toContain(copied);
    expect(result.tables.changes).toBe(copied);
    copy.close();
    await expect(backupDatabase(database.sqlite, path.join(d, 'copy.db'))).rejects.toThrow(/exists already/);
    database.close();
  });
});
