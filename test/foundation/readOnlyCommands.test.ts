import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { demoOperation } from '../../src/commands/demoOperations.js';
import { cliArgs, runNode } from '../helpers/cli.js';
import { tempDir } from '../helpers/context.js';

const { dir, cleanup } = tempDir();
afterAll(cleanup);

const cli = (args: string[], db: string) => runNode(cliArgs(args), { HOME: dir, VCU_SYNC_DB: db }, dir);

describe('commands that read do not create the database', () => {
  // A folder of its own, so "nothing was written" can be checked by listing it.
  const empty = path.join(dir, 'empty');
  mkdirSync(empty);
  const missing = path.join(empty, 'typo.db');
  const commands: string[][] = [
    ['outbox', 'list'],
    ['outbox', 'show', 'ref-1'],
    ['outbox', 'retry', 'ref-1'],
    ['outbox', 'cancel', 'ref-1'],
    ['schema'],
    ['db', 'backup', path.join(empty, 'copy.db')],
  ];
  it.each(commands)('%s %s says the file does not exist and leaves none behind', (...args) => {
    const { code, stdout, stderr } = cli(args, missing);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr.trim().split('\n')).toEqual([
      `vcu-sync: database ${missing} does not exist: the daemon has never run with this configuration (check database.path / VCU_SYNC_DB)`,
    ]);
    // Nothing at all was written: no database, no -wal/-shm, no backup.
    expect(readdirSync(empty)).toEqual([]);
  });

  it('status says so too, with its own exit code, and creates nothing', () => {
    const { code, stdout } = cli(['status'], missing);
    expect(code).toBe(2);
    expect(stdout).toContain(`database ${missing} does not exist`);
    expect(readdirSync(empty)).toEqual([]);
  });

  it('enqueue may create the database, and then outbox reads what it stored', () => {
    const db = path.join(dir, 'made-by-enqueue', 'vcu.db');
    const file = path.join(dir, 'op.json');
    writeFileSync(file, JSON.stringify(demoOperation(0, 'mkt-test', new Date('2026-01-02T03:04:05Z'))));
    const enqueued = cli(['enqueue', file], db);
    expect(enqueued.code, enqueued.stderr).toBe(0);
    const ref = (JSON.parse(enqueued.stdout) as { marketplaceTransactionRef: string })
      .marketplaceTransactionRef;
    const shown = cli(['outbox', 'show', ref], db);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ marketplaceTransactionRef: ref, state: 'queued' });
  });

  it('db migrate may create the database, and db backup then copies it', () => {
    const db = path.join(dir, 'migrated.db');
    expect(cli(['db', 'migrate'], db).code).toBe(0);
    expect(existsSync(db)).toBe(true);
    const backup = cli(['db', 'backup', path.join(dir, 'migrated-copy.db')], db);
    expect(backup.code, backup.stderr).toBe(0);
    const copy = new Database(path.join(dir, 'migrated-copy.db'), { readonly: true });
    expect(copy.prepare('SELECT count(*) FROM outbox').pluck().get()).toBe(0);
    copy.close();
  });
});
