import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openDatabase } from '../../src/db/open.js';
import { openPostgres, type PgDatabase } from '../../src/db/pg.js';
import { tempDir } from '../helpers/context.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { daemonEnv, daemonToml, spawnCli, writeToml } from '../ops/child.js';
import { PERSONAL, tokenization, transfer } from '../outbox/fixtures.js';

/**
 * `vcu-sync enqueue` and `vcu-sync outbox` (every action) as child processes with database.url
 * set, side by side with the same commands on SQLite: the same exit codes and the same output,
 * times aside (each process reads its own clock). No SQLite file appears on the PostgreSQL side,
 * the password never shows, and `outbox` on a database the daemon never ran on is refused as a
 * missing SQLite file is.
 */

const cluster = inject('postgres');

let database: TestDatabase | undefined;
let store: PgDatabase | undefined;
/** database.path of the PostgreSQL runs: it must stay empty. */
let pgDir: { dir: string; cleanup: () => void };
/** database.path of the SQLite runs. */
let sqliteDir: { dir: string; cleanup: () => void };
/** Config and input files. */
let aside: { dir: string; cleanup: () => void };
let envs: { sqlite: NodeJS.ProcessEnv; postgres: NodeJS.ProcessEnv };

beforeAll(async () => {
  database = await createTestDatabase(cluster);
  pgDir = tempDir('vcu-sync-pgoutbox-');
  sqliteDir = tempDir('vcu-sync-sqoutbox-');
  aside = tempDir('vcu-sync-pgoutbox-files-');
  const config = writeToml(aside.dir, daemonToml({ onStartup: false }));
  envs = {
    sqlite: daemonEnv(sqliteDir.dir, 'http://127.0.0.1:9', config),
    postgres: daemonEnv(pgDir.dir, 'http://127.0.0.1:9', config, { VCU_SYNC_DATABASE_URL: database.url }),
  };
});
afterAll(async () => {
  await store?.close();
  await database?.drop();
  pgDir?.cleanup();
  sqliteDir?.cleanup();
  aside?.cleanup();
});

interface Run {
  code: number | null;
  /** stdout, times replaced by `<time>`. */
  stdout: string;
  /** stderr without pino's JSON lines, times replaced. */
  said: string;
}

const TIME = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g;

/** One child on `side`; with the checks every PostgreSQL run must pass. */
async function run(side: 'sqlite' | 'postgres', args: string[]): Promise<Run> {
  const c = spawnCli(args, envs[side]);
  let stdout = '';
  let stderr = '';
  c.child.stdout!.on('data', (d: Buffer) => {
    stdout += String(d);
  });
  c.child.stderr!.on('data', (d: Buffer) => {
    stderr += String(d);
  });
  const code = await c.exited;
  if (side === 'postgres') {
    expect(c.output()).not.toContain(cluster.password);
    expect(readdirSync(pgDir.dir)).toEqual([]);
  }
  const said = stderr
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('{"'))
    .join('\n');
  return { code, stdout: stdout.replace(TIME, '<time>'), said: said.replace(TIME, '<time>') };
}

/** The same command on both stores at once: SQLite's run, after checking PostgreSQL's is the same. */
async function both(args: string[]): Promise<Run> {
  const [onSqlite, onPostgres] = await Promise.all([run('sqlite', args), run('postgres', args)]);
  expect(onPostgres, args.join(' ')).toEqual(onSqlite);
  return onSqlite;
}

/** A file in `aside` holding `value` as JSON (or `text` as is). */
function input(name: string, value: unknown): string {
  const file = path.join(aside.dir, name);
  writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value));
  return file;
}

/** Literal SQL on both stores (what the dispatcher would have done to a row). */
async function onBothStores(sql: string): Promise<void> {
  const sqlite = openDatabase(path.join(sqliteDir.dir, 'vcu.db'), { migrate: false });
  try {
    sqlite.sqlite.exec(sql);
  } finally {
    sqlite.close();
  }
  store ??= await openPostgres(database!.url, { migrate: false, max: 1 });
  await store.pool.query(sql);
}

describe('vcu-sync enqueue and outbox on PostgreSQL', () => {
  it('outbox before anything was queued: refused as a missing database is (exit 1), nothing created', async () => {
    const [onSqlite, onPostgres] = await Promise.all([
      run('sqlite', ['outbox', 'list']),
      run('postgres', ['outbox', 'list']),
    ]);
    expect(onSqlite.code).toBe(1);
    expect(onSqlite.said).toMatch(/vcu\.db does not exist: the daemon has never run with this configuration/);
    expect(onPostgres.code).toBe(1);
    expect(onPostgres.said).toMatch(
      new RegExp(
        `^vcu-sync: database 127\\.0\\.0\\.1:${cluster.port}/${database!.name} has no vcu-sync tables: the daemon has never run with this configuration`,
      ),
    );
    expect(readdirSync(sqliteDir.dir)).toEqual([]);
  });

  it('enqueue: 0 queued (the entry printed, masked), 0 again, 1 another body, 65 invalid or not JSON', async () => {
    const op = input('op-1.json', transfer('op-1', { unitId: 701 }));
    const first = await both(['enqueue', op]);
    expect(first.code).toBe(0);
    const entry = JSON.parse(first.stdout) as Record<string, unknown>;
    expect(entry).toMatchObject({ id: 1, marketplaceTransactionRef: 'op-1', state: 'queued', attempts: 0 });
    for (const v of Object.values(PERSONAL)) expect(first.stdout).not.toContain(v);

    expect(await both(['enqueue', op])).toEqual(first);

    const other = await both([
      'enqueue',
      input('op-1b.json', transfer('op-1', { unitId: 701, transactionAmount: 3 })),
    ]);
    expect(other.code).toBe(1);
    expect(other.said).toBe(
      'vcu-sync: marketplaceTransactionRef op-1 is already queued with a different body; use a new ref for a new operation',
    );

    const bad = await both([
      'enqueue',
      input('bad.json', tokenization('bad-1', { transactionAmount: -1, extraField: 1 })),
    ]);
    expect(bad.code).toBe(65);
    expect(bad.said).toMatch(
      /notification is invalid \(\d+ problems\)\n {2}transactionAmount: must be positive/,
    );
    const notJson = await both(['enqueue', input('junk.json', '{not json')]);
    expect(notJson.code).toBe(65);
    expect(notJson.said).toMatch(/junk\.json is not valid JSON$/);

    const second = await both(['enqueue', input('op-2.json', transfer('op-2', { unitId: 702 }))]);
    expect(second.code).toBe(0);
  });

  it('outbox list (table, JSON, by state) and show, the same on both', async () => {
    const table = await both(['outbox', 'list']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/op-1\s+Transfer\s+queued/);
    expect(table.stdout).toMatch(/op-2\s+Transfer\s+queued/);
    const listed = await both(['outbox', 'list', '--json', '--state', 'queued']);
    expect(listed.code).toBe(0);
    const page = JSON.parse(listed.stdout) as { items: Array<{ marketplaceTransactionRef: string }> };
    expect(page.items.map((i) => i.marketplaceTransactionRef)).toEqual(['op-1', 'op-2']);
    expect((await both(['outbox', 'list', '--json', '--state', 'failed'])).stdout).toBe(
      '{\n  "items": [],\n  "nextCursor": null\n}\n',
    );

    const shown = await both(['outbox', 'show', 'op-1']);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ marketplaceTransactionRef: 'op-1', attempt_log: [] });
    for (const v of Object.values(PERSONAL)) expect(shown.stdout).not.toContain(v);
  });

  it('outbox retry and cancel with their exit codes: 0 done, 1 refused, 3 no such ref, 64 usage', async () => {
    const expedited = await both(['outbox', 'retry', 'op-1']);
    expect(expedited.code).toBe(0);
    expect(JSON.parse(expedited.stdout)).toMatchObject({ state: 'queued' });

    const cancelled = await both(['outbox', 'cancel', 'op-1']);
    expect(cancelled.code).toBe(0);
    expect(JSON.parse(cancelled.stdout)).toMatchObject({ state: 'cancelled' });
    const refused = await both(['outbox', 'retry', 'op-1']);
    expect(refused.code).toBe(1);
    expect(refused.said).toMatch(/cannot retry op-1: it is cancelled/);

    // op-2 failed after an attempt, as the dispatcher would leave it: retry queues it again.
    await onBothStores(
      `UPDATE outbox SET state = 'failed', attempts = 1, last_status = 500, last_error = 'operator answered 500',
         finished_at = updated_at WHERE "marketplaceTransactionRef" = 'op-2';
       INSERT INTO outbox_attempts (outbox_id, started_at, duration_ms, status_code, error)
         VALUES ((SELECT id FROM outbox WHERE "marketplaceTransactionRef" = 'op-2'), '2026-03-01T12:00:00.000Z', 42, 500, 'HTTP 500');`,
    );
    const failed = await both(['outbox', 'show', 'op-2']);
    expect(JSON.parse(failed.stdout)).toMatchObject({
      state: 'failed',
      attempt_log: [{ duration_ms: 42, status_code: 500, error: 'HTTP 500' }],
      // The CLI prints the API's JSON: the camelCase twins too (docs/api.md "Field names").
      attemptLog: [{ durationMs: 42, statusCode: 500, error: 'HTTP 500' }],
      lastError: 'operator answered 500',
      last_error: 'operator answered 500',
    });
    const retried = await both(['outbox', 'retry', 'op-2']);
    expect(retried.code).toBe(0);
    expect(JSON.parse(retried.stdout)).toMatchObject({ state: 'queued', attempts: 0, finished_at: null });

    // Accepted by the operator: too late to cancel.
    await onBothStores(
      `UPDATE outbox SET state = 'accepted', accepted_at = updated_at WHERE "marketplaceTransactionRef" = 'op-2'`,
    );
    const late = await both(['outbox', 'cancel', 'op-2']);
    expect(late.code).toBe(1);
    expect(late.said).toMatch(/cannot cancel op-2: it is accepted; the operator has already accepted it/);

    // Independent of each other and of the rows: run together (each pair is two process starts).
    const [noShow, noCancel, usage, badState] = await Promise.all([
      both(['outbox', 'show', 'nope']),
      both(['outbox', 'cancel', 'nope']),
      both(['outbox', 'show']),
      both(['outbox', 'list', '--state', 'bogus']),
    ]);
    expect([noShow.code, noCancel.code, usage.code, badState.code]).toEqual([3, 3, 64, 64]);
  });
});
