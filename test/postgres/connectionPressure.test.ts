import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { tempDir } from '../helpers/context.js';
import { type Cluster, createTestDatabase, startCluster, withAdmin } from '../helpers/postgres.js';
import {
  type CliChild,
  daemonEnv,
  daemonToml,
  spawnCli,
  until,
  untilEvent,
  writeToml,
} from '../ops/child.js';
import { transfer } from '../outbox/fixtures.js';

/**
 * Issue 25, item 2: the server's connection slots all taken by another client (`max_connections`
 * reached). A running replica goes on with the connections it holds (its pool keeps some idle, the
 * LISTEN and the liveness session are never given up), and a connection refused for want of a slot
 * is tried again instead of failing the request: it still enqueues, reads and delivers.
 * A private cluster with few slots.
 */

const TOKEN = 'ops-test-token-0123456789';
const authorized = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
const HOG = { user: 'vcu_hog', password: 'hog-password-0123' };

let cluster: Cluster;
let sim: Simulator;
let dir: string;
let cleanup: () => void;
const hogs: pg.Client[] = [];
let replica: CliChild | undefined;

beforeAll(async () => {
  cluster = await startCluster({ maxConnections: 24 });
  await withAdmin(cluster.info, (admin) =>
    admin.query(`CREATE ROLE ${HOG.user} LOGIN PASSWORD '${HOG.password}'`),
  );
  sim = await startSimulator({ webhook: { policy: 'none' }, projects: 3, issuances: 3, units: 10 });
  ({ dir, cleanup } = tempDir('vcu-sync-pressure-'));
});
afterAll(async () => {
  if (replica && replica.child.exitCode === null) replica.child.kill('SIGKILL');
  await replica?.exited;
  for (const hog of hogs) await hog.end().catch(() => {});
  await sim?.close();
  await cluster?.stop();
  cleanup?.();
});

/** The replica's sessions a full server leaves it: pool minimum, LISTEN, liveness. */
const HELD = 6;

/** How many sessions the replica (application_name vcu-sync...) has on `database` now. */
async function replicaSessions(database: string): Promise<number> {
  return withAdmin(cluster.info, async (admin) => {
    const { rows } = await admin.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name LIKE 'vcu-sync%'`,
      [database],
    );
    return rows[0]?.n ?? 0;
  });
}

/** Opens connections as another role until the server refuses one for want of a slot. */
async function takeEverySlot(): Promise<number> {
  for (let i = 0; i < 500; i++) {
    const hog = new pg.Client({
      host: cluster.info.host,
      port: cluster.info.port,
      database: 'postgres',
      ...HOG,
    });
    hog.on('error', () => {});
    try {
      await hog.connect();
      hogs.push(hog);
    } catch (err) {
      expect((err as { code?: string }).code).toBe('53300');
      return hogs.length;
    }
  }
  throw new Error('the server never ran out of connection slots');
}

/** Tries one more connection as the other role: null when it opens (closed at once), else the SQLSTATE. */
async function oneMoreConnection(): Promise<string | null> {
  const client = new pg.Client({
    host: cluster.info.host,
    port: cluster.info.port,
    database: 'postgres',
    ...HOG,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.end();
    return null;
  } catch (err) {
    return String((err as { code?: string }).code);
  }
}

describe('a replica when the server has no free connection slot', () => {
  it('keeps enqueuing, reading and delivering on the connections it holds', async () => {
    const database = await createTestDatabase(cluster.info);
    const env = daemonEnv(dir, sim.url, writeToml(dir, daemonToml({ onStartup: false })), {
      VCU_SYNC_DATABASE_URL: database.url,
    });
    const cli = spawnCli(['run'], env);
    replica = cli;
    await untilEvent(cli, 'daemon.ready', 60_000);
    const found = cli.events().find((e) => e.event === 'api.listening');
    const api = `http://${String(found?.listen)}`;
    const enqueue = async (ref: string) => {
      const res = await fetch(`${api}/v1/operations`, {
        method: 'POST',
        headers: authorized,
        body: JSON.stringify(transfer(ref)),
      });
      return { status: res.status, text: await res.text() };
    };
    // Some work first, several at once: the pool opens a few connections and keeps them idle.
    const warm = Array.from({ length: 8 }, (_, i) => `warm-${i}`);
    const warmed = await Promise.all(warm.map(enqueue));
    expect(warmed.map((w) => w.status)).toEqual(warm.map(() => 201));

    // Once the burst's extra connections have timed out idle, the replica holds its pool's minimum
    // (4), the LISTEN's and its liveness session: what it keeps whatever others take.
    const sessions = () => replicaSessions(database.name);
    await until('the pool down to its idle minimum', async () => (await sessions()) <= HELD);
    const taken = await takeEverySlot();
    expect(taken).toBeGreaterThan(0);
    // Nobody else can connect now.
    expect(await oneMoreConnection()).toBe('53300');

    const under = Array.from({ length: 6 }, (_, i) => `pressed-${i}`);
    for (const ref of under) {
      const answer = await enqueue(ref);
      expect(answer.status, answer.text).toBe(201);
    }
    const list = await fetch(`${api}/v1/operations?limit=50`, { headers: authorized });
    expect(list.status, await list.text()).toBe(200);
    const ready = await fetch(`${api}/readyz`);
    expect(ready.status, await ready.text()).toBe(200);
    await until(
      () => `everything delivered under pressure; replica:\n${cli.output().slice(-3000)}`,
      () => {
        if (cli.child.exitCode !== null) throw new Error(`replica exited:\n${cli.output().slice(-3000)}`);
        const received = new Set(sim.notifications.map((n) => n.ref));
        return [...warm, ...under].every((ref) => received.has(ref));
      },
      120_000,
    );
    // Still every slot taken: the work above ran on connections the replica already held.
    expect(await oneMoreConnection()).toBe('53300');
    expect(await sessions()).toBe(HELD);
    // Nor did the database ever count as gone: a full server is not an outage.
    expect(cli.events().filter((e) => e.event === 'db.unreachable')).toEqual([]);

    for (const hog of hogs.splice(0)) await hog.end();
    cli.child.kill('SIGTERM');
    expect(await cli.exited, cli.output().slice(-3000)).toBe(0);
  }, 240_000);
});
