import { readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Health } from '../../src/health/readHealth.js';
import { holdLiveness, type ReplicaLiveness } from '../../src/postgres/liveness.js';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { operation, pgHealthStore } from '../contract/healthStores.js';
import { tempDir } from '../helpers/context.js';
import { createTestDatabase, type TestDatabase, withAdmin } from '../helpers/postgres.js';
import { type CliChild, daemonEnv, daemonToml, spawnCli, writeToml } from '../ops/child.js';

/**
 * `vcu-sync status` as a child process with database.url set: the same output and exit codes as
 * on SQLite, the replicas listed, no SQLite file opened or created, the password never shown; a
 * server it cannot reach is a critical status (exit 2), not a crash.
 */

const cluster = inject('postgres');
let database: TestDatabase;
let store: PgDatabase;
let dbDir: { dir: string; cleanup: () => void };
let aside: { dir: string; cleanup: () => void };
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  database = await createTestDatabase(cluster);
  store = await openPostgres(database.url, { max: 2 });
  dbDir = tempDir('vcu-sync-pgstatus-');
  aside = tempDir('vcu-sync-pgstatus-conf-');
  // Schedules off: a fresh database has no sync problem, so it is OK.
  const config = writeToml(aside.dir, daemonToml({ onStartup: false }));
  env = daemonEnv(dbDir.dir, 'http://127.0.0.1:1', config, { VCU_SYNC_DATABASE_URL: database.url });
});
afterAll(async () => {
  await store?.close();
  await database?.drop();
  dbDir?.cleanup();
  aside?.cleanup();
});

async function status(args: string[], childEnv = env): Promise<{ code: number | null; out: string }> {
  const c: CliChild = spawnCli(['status', ...args], childEnv);
  const code = await c.exited;
  const out = c.output();
  expect(out).not.toContain(cluster.password);
  expect(readdirSync(dbDir.dir)).toEqual([]);
  return { code, out };
}

describe('vcu-sync status on PostgreSQL', () => {
  it('a fresh database is OK (exit 0), in text and JSON, naming the server without credentials', async () => {
    const text = await status([]);
    expect(text.code, text.out).toBe(0);
    expect(text.out).toMatch(/^vcu-sync OK\n/);
    expect(text.out).toContain(`postgres 127.0.0.1:${cluster.port}/`);
    expect(text.out).toContain('replicas: none registered');
    const json = await status(['--json']);
    expect(json.code).toBe(0);
    const health = JSON.parse(json.out) as Health;
    expect(health).toMatchObject({ status: 'ok', exitCode: 0, problems: [] });
    expect(health.identity.database.kind).toBe('postgres');
    expect(health.snapshot.replicas).toEqual([]);
  });

  it('lists the replicas and reports a dead one holding claims, with the exit code of the worst problem', async () => {
    const { exec } = await pgHealthStore(store);
    await operation(exec, 'held-1', 'sending', 0, { owner: 'replica-gone' });
    const live: ReplicaLiveness = await holdLiveness(store.pool, {
      owner: 'replica-gone',
      name: 'mkt-gone',
      holds: 'outbox',
      now: new Date().toISOString(),
    });
    await withAdmin(cluster, async (admin) => {
      await admin.query('SELECT pg_terminate_backend($1, 10000)', [live.pid]);
    });
    const json = await status(['--json']);
    const health = JSON.parse(json.out) as Health;
    expect(json.code).toBe(health.exitCode);
    expect(health.snapshot.replicas).toMatchObject([
      { owner: 'replica-gone', name: 'mkt-gone', alive: false, claimed: 1 },
    ]);
    expect(health.problems.map((p) => p.code)).toContain('replica-dead');
    const text = await status([]);
    expect(text.code).toBe(health.exitCode);
    expect(text.out).toContain('replica-dead: replica mkt-gone (replica-gone) is gone');
    expect(text.out).toMatch(
      / {2}mkt-gone \(replica-gone\) DEAD, heartbeat \d+s ago, runs outbox, 1 claimed/,
    );
  });

  it('with two replicas alive it says so, lists each with its host, pid and start, never "daemon not running"', async () => {
    const lives: ReplicaLiveness[] = [];
    try {
      for (const [owner, name] of [
        ['host-a:4101:aaaa1111', 'mkt-a'],
        ['host-b:4102:bbbb2222', 'mkt-b'],
      ] as const) {
        lives.push(
          await holdLiveness(store.pool, {
            owner,
            name,
            holds: 'outbox,mirror',
            now: new Date().toISOString(),
          }),
        );
      }
      const text = await status([]);
      expect(text.out).not.toContain('daemon not running');
      expect(text.out.split('\n')[1]).toMatch(/, 2 replicas running$/);
      expect(text.out).toMatch(
        / {2}mkt-a \(host-a:4101:aaaa1111\) alive, heartbeat \d+s ago, runs outbox,mirror, 0 claimed, started \d+s ago/,
      );
      expect(text.out).toMatch(/ {2}mkt-b \(host-b:4102:bbbb2222\) alive, heartbeat \d+s ago/);
    } finally {
      for (const live of lives) await live.close();
    }
    // Both gone: none running, whatever rows stay.
    const after = await status([]);
    expect(after.out.split('\n')[1]).toMatch(/, no replica running$/);
  });

  it('a wrong password gets PostgreSQL advice (user, password, pg_hba.conf, database.url), not SQLite advice', async () => {
    const url = new URL(database.url);
    url.password = 'not-the-password-0';
    const out = await status(['--json'], { ...env, VCU_SYNC_DATABASE_URL: url.toString() });
    expect(out.code).toBe(2);
    expect(out.out).not.toContain('not-the-password-0');
    const health = JSON.parse(out.out) as Health;
    const [problem] = health.problems;
    expect(problem?.code).toBe('database-unreadable');
    expect(problem?.message).toContain('password authentication failed');
    expect(problem?.action).toMatch(
      /^PostgreSQL refused the login: check the user and password in database\.url/,
    );
    expect(problem?.action).toContain('VCU_SYNC_DATABASE_URL');
    expect(problem?.action).toContain('pg_hba.conf');
    expect(problem?.action).not.toMatch(/kernel|permissions|the file/);
    const text = await status([], { ...env, VCU_SYNC_DATABASE_URL: url.toString() });
    expect(text.out).toContain('→ PostgreSQL refused the login');
  });

  it('a database that does not exist says to create it or correct the URL', async () => {
    const url = new URL(database.url);
    url.pathname = '/no_such_database_here';
    const out = await status(['--json'], { ...env, VCU_SYNC_DATABASE_URL: url.toString() });
    const health = JSON.parse(out.out) as Health;
    expect(health.problems[0]?.action).toMatch(
      /^the database named in database\.url .* does not exist on that server/,
    );
  });

  it('a server it cannot reach is critical database-unreachable (exit 2), without the password', async () => {
    const url = database.url.replace(`:${cluster.port}/`, ':1/');
    const out = await status(['--json'], { ...env, VCU_SYNC_DATABASE_URL: url });
    expect(out.code).toBe(2);
    const health = JSON.parse(out.out) as Health;
    expect(health.problems.map((p) => p.code)).toEqual(['database-unreachable']);
    expect(health.problems[0]?.message).toContain('cannot connect to PostgreSQL at 127.0.0.1:1/');
    expect(health.problems[0]?.action).toMatch(/^check the server \(pg_isready/);
  });
});
