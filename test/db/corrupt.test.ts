import { createHash } from 'node:crypto';
import { closeSync, copyFileSync, openSync, readFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteContext } from '../../src/app/sqliteStores.js';
import { silentLogger } from '../../src/common/log.js';
import { loadConfig } from '../../src/config/config.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { databaseFaultsFor } from '../../src/sqlite/faults.js';
import { prepareDaemonDatabase } from '../../src/sqlite/integrity.js';
import { openDatabase } from '../../src/sqlite/open.js';
import { cliArgs, runNode } from '../helpers/cli.js';
import { tempDir } from '../helpers/context.js';
import { apiCaller } from '../helpers/http.js';
import { sqliteApiComponent } from '../helpers/sqliteApi.js';
import { daemonEnv, writeToml } from '../ops/child.js';
import { enqueueOperation, transfer } from '../outbox/fixtures.js';
import { startDaemonChild, TOKEN } from './daemonChild.js';

let sim: Simulator;
let sound: string;
let damaged: string;
const cleanups: Array<() => void> = [];

function workDir(): string {
  const { dir, cleanup } = tempDir('vcu-sync-corrupt-');
  cleanups.push(cleanup);
  return dir;
}

const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

/** A database with a few hundred queued operations, closed (WAL folded in). */
function seedDatabase(file: string): void {
  const config = loadConfig({
    env: { VCU_SYNC_DB: file },
    overrides: { 'operator.marketplace_id': 'mkt-ops' },
  });
  const ctx = openSqliteContext(config, silentLogger);
  for (let i = 0; i < 300; i++)
    expect(enqueueOperation(ctx, transfer(`seed-${i}`, { unitId: 1_000 + i })).status).toBe(201);
  ctx.database.close();
}

/** Overwrites the header of one of the outbox table's leaf pages in a copy of `source`. */
function damagedCopy(source: string, target: string): void {
  copyFileSync(source, target);
  const db = new Database(target, { readonly: true });
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const leaves = db
    .prepare("SELECT pageno FROM dbstat WHERE name = 'outbox' AND pagetype = 'leaf' ORDER BY pageno")
    .pluck()
    .all() as number[];
  db.close();
  expect(leaves.length).toBeGreaterThan(4);
  const page = leaves[Math.floor(leaves.length / 2)]!;
  const fd = openSync(target, 'r+');
  writeSync(fd, Buffer.alloc(12, 0xff), 0, 12, (page - 1) * pageSize);
  closeSync(fd);
}

beforeAll(async () => {
  sim = await startSimulator({ projects: 5, issuances: 5, units: 5, webhook: { policy: 'none' } });
  const dir = workDir();
  sound = path.join(dir, 'sound.db');
  damaged = path.join(dir, 'damaged.db');
  seedDatabase(sound);
  damagedCopy(sound, damaged);
});
afterAll(async () => {
  await sim.close();
  for (const c of cleanups) c();
});

describe('a database with a damaged data page', () => {
  it('start-up finds it: writes refused (the file is left as it was), status critical with the restore step', async () => {
    const dir = workDir();
    const file = path.join(dir, 'vcu.db');
    copyFileSync(damaged, file);
    const before = sha(file);
    const daemon = await startDaemonChild(dir, sim.url);
    const corrupt = daemon.cli.events().find((e) => e.event === 'database.corrupt');
    expect(corrupt, daemon.cli.output().slice(-2000)).toBeDefined();

    expect((await fetch(`${daemon.base}/healthz`)).status).toBe(200);
    const status = await daemon.call('GET', '/status');
    expect(status.status).toBe(503);
    expect(status.json.status).toBe('critical');
    const problem = status.json.problems[0];
    expect(problem.code).toBe('database-corrupt');
    expect(problem.message).toMatch(/quick_check/);
    expect(problem.action).toMatch(/backup/);

    const refused = await daemon.call('POST', '/v1/operations', transfer('after-damage'));
    expect(refused.status, refused.text).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('300');
    expect(refused.json.error).toMatch(/damaged/);
    // The status page still renders for people.
    expect((await daemon.call('GET', '/')).status).toBe(200);

    expect(await daemon.stop()).toBe(0);
    expect(sha(file)).toBe(before);

    // `vcu-sync status` in another process, on the file alone, says so too.
    const env = daemonEnv(dir, sim.url, writeToml(dir, ''));
    const cli = runNode(cliArgs(['status', '--json']), env as Record<string, string>);
    expect(cli.code, cli.stderr).toBe(2);
    expect(JSON.parse(cli.stdout).problems[0].code).toBe('database-corrupt');
  });

  it('a large file is checked in the background, off the event loop; a sound one passes', async () => {
    const dir = workDir();
    for (const [source, corrupt] of [
      [damaged, true],
      [sound, false],
    ] as const) {
      const file = path.join(dir, `${corrupt ? 'bad' : 'good'}.db`);
      copyFileSync(source, file);
      const database = openDatabase(file);
      try {
        await prepareDaemonDatabase(database, {
          busyTimeoutMs: 50,
          checkBeforeServingMaxBytes: 0,
          log: silentLogger,
        });
        const found = databaseFaultsFor(database.sqlite).facts().corruption;
        if (corrupt) expect(found?.source).toBe('integrity-check');
        else expect(found).toBeNull();
      } finally {
        database.close();
      }
    }
  });

  it('without the check, the first query that meets the damage marks it, and writes are refused from then on', async () => {
    const dir = workDir();
    const file = path.join(dir, 'vcu.db');
    copyFileSync(damaged, file);
    const config = loadConfig({
      env: { VCU_SYNC_DB: file },
      overrides: { 'api.listen': '127.0.0.1:0', 'api.token': TOKEN, 'operator.marketplace_id': 'mkt-ops' },
    });
    const ctx = openSqliteContext(config, silentLogger);
    const api = sqliteApiComponent(ctx);
    await api.start();
    try {
      const call = apiCaller(`http://127.0.0.1:${api.address()!.port}`, TOKEN);
      const list = await call('GET', '/v1/operations?limit=500');
      expect(list.status, list.text).toBe(503);
      const status = await call('GET', '/status');
      expect(status.json.problems[0].code).toBe('database-corrupt');
      expect(status.json.problems[0].message).toMatch(/a query found/);
      const refused = await call('POST', '/v1/operations', transfer('after-damage'));
      expect(refused.status).toBe(503);
    } finally {
      await api.stop();
      ctx.database.close();
    }
  });
});
