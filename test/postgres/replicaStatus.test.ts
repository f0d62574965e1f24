import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { type Health, readHealth } from '../../src/health/readHealth.js';
import { pgHealthReads } from '../../src/postgres/health.js';
import { holdLiveness, type ReplicaLiveness } from '../../src/postgres/liveness.js';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { ago, CONFIG, NOW, operation, pgHealthStore, syncRun } from '../contract/healthStores.js';
import { testContext } from '../helpers/context.js';
import { apiCaller } from '../helpers/http.js';
import { createTestDatabase, type TestDatabase, withAdmin } from '../helpers/postgres.js';
import { sqliteApiComponent } from '../helpers/sqliteApi.js';

/**
 * Replicas in status on PostgreSQL: two liveness owners on two pools (two replicas), each holding
 * claims; one's session is ended as a crash would end it, and status shows it dead with what it
 * still holds, in the snapshot, the rules, and `GET /status`. A running sync run whose run lock
 * nobody holds is reported too; one whose lock is held is not.
 */

const cluster = inject('postgres');
const TOKEN = 'test-api-token-0123456789';
const RUN_LOCK = "SELECT pg_advisory_lock(hashtextextended('vcu-sync sync ' || $1, 0))";

let database: TestDatabase;
let storeA: PgDatabase;
let storeB: PgDatabase;
let liveA: ReplicaLiveness;
let liveB: ReplicaLiveness;
/** B's session holding the projects run lock, as a sync in progress does. */
let runLock: pg.Client;

beforeAll(async () => {
  database = await createTestDatabase(cluster);
  storeA = await openPostgres(database.url, { max: 2 });
  storeB = await openPostgres(database.url, { max: 2 });
  const { exec } = await pgHealthStore(storeB);
  await operation(exec, 'a-1', 'sending', 3, { owner: 'replica-a' });
  await operation(exec, 'a-2', 'sending', 2, { owner: 'replica-a' });
  await operation(exec, 'b-1', 'sending', 1, { owner: 'replica-b' });
  await syncRun(exec, 'projects', 'running', 4);
  await syncRun(exec, 'units', 'running', 30);
  liveA = await holdLiveness(storeA.pool, {
    owner: 'replica-a',
    name: 'mkt-a',
    holds: 'outbox,mirror',
    now: ago(60),
  });
  liveB = await holdLiveness(storeB.pool, {
    owner: 'replica-b',
    name: 'mkt-b',
    holds: 'outbox',
    now: ago(50),
  });
  await liveA.heartbeat(ago(1));
  await liveB.heartbeat(ago(0.5));
  runLock = new pg.Client(storeB.pool.options);
  await runLock.connect();
  await runLock.query(RUN_LOCK, ['projects']);
});
afterAll(async () => {
  await runLock?.end();
  await liveB?.close();
  await liveA?.close().catch(() => {});
  await storeA?.close();
  await storeB?.close();
  await database?.drop();
});

const replicaProblems = (h: Health) =>
  h.problems.filter((p) => p.code === 'replica-dead').map((p) => p.message);

describe('replicas in status on PostgreSQL', () => {
  it('shows both replicas alive with what they hold, and a running sync whose run lock is free', async () => {
    const health = await readHealth(pgHealthReads(storeB.pool), CONFIG, NOW);
    expect(health.snapshot.replicas).toEqual([
      {
        owner: 'replica-a',
        name: 'mkt-a',
        runs: 'outbox,mirror',
        startedAt: ago(60),
        lastHeartbeatAt: ago(1),
        alive: true,
        claimed: 2,
        claimedDeliveries: 0,
        oldestClaimAt: ago(2),
      },
      {
        owner: 'replica-b',
        name: 'mkt-b',
        runs: 'outbox',
        startedAt: ago(50),
        lastHeartbeatAt: ago(0.5),
        alive: true,
        claimed: 1,
        claimedDeliveries: 0,
        oldestClaimAt: ago(0),
      },
    ]);
    expect(health.snapshot.runningSyncs).toEqual([
      { id: 1, resource: 'projects', startedAt: ago(4), pid: 4242, lockHeld: true },
      { id: 2, resource: 'units', startedAt: ago(30), pid: 4242, lockHeld: false },
    ]);
    expect(replicaProblems(health)).toEqual([
      'units sync run 2 is marked running but no replica holds its run lock: the replica running it is gone',
    ]);
  });

  it("a replica whose session ends is dead with its claims; a live one's stale heartbeat is reported", async () => {
    await withAdmin(cluster, async (admin) => {
      // With a timeout, pg_terminate_backend waits until the backend is gone (and its lock freed).
      const { rows } = await admin.query<{ ok: boolean }>('SELECT pg_terminate_backend($1, 10000) AS ok', [
        liveA.pid,
      ]);
      expect(rows[0]?.ok).toBe(true);
    });
    const afterCrash = await readHealth(pgHealthReads(storeB.pool), CONFIG, NOW);
    expect(afterCrash.snapshot.replicas?.map((r) => [r.owner, r.alive, r.claimed])).toEqual([
      ['replica-a', false, 2],
      ['replica-b', true, 1],
    ]);
    expect(replicaProblems(afterCrash)).toEqual([
      'replica mkt-a (replica-a) is gone (its liveness lock is free), holding 2 claimed operations; last heartbeat 60s ago',
      'units sync run 2 is marked running but no replica holds its run lock: the replica running it is gone',
    ]);

    // B hangs: its session (and lock) stay, its heartbeat stops.
    await storeB.pool.query("UPDATE replicas SET last_heartbeat_at = $1 WHERE lease_owner = 'replica-b'", [
      ago(10),
    ]);
    const hung = await readHealth(pgHealthReads(storeB.pool), CONFIG, NOW);
    expect(replicaProblems(hung)).toContain(
      'replica mkt-b (replica-b) has not sent a heartbeat for 10m though its session holds its lock, holding 1 claimed operation',
    );
    expect(hung.exitCode).toBeGreaterThanOrEqual(1);
  });

  it('GET /status on the PostgreSQL reads answers the same health, replicas included', async () => {
    const ctx = testContext({
      clock: new ManualClock(NOW),
      overrides: { 'api.listen': '127.0.0.1:0', 'api.token': TOKEN },
    });
    const api = sqliteApiComponent(ctx, { healthReads: pgHealthReads(storeB.pool) });
    await api.start();
    try {
      const call = apiCaller(`http://127.0.0.1:${api.address()!.port}`, TOKEN);
      const answer = await call('GET', '/status');
      const body = answer.json as Health;
      expect(answer.status).toBe(body.status === 'critical' ? 503 : 200);
      const direct = await readHealth(pgHealthReads(storeB.pool), ctx.config, NOW, ctx.startedAt);
      expect(body.snapshot.replicas).toEqual(direct.snapshot.replicas);
      expect(body.problems).toEqual(direct.problems);
      expect(body.snapshot.replicas?.find((r) => r.owner === 'replica-a')).toMatchObject({
        alive: false,
        claimed: 2,
      });
      const metrics = await call('GET', '/metrics');
      expect(metrics.text).toContain('vcu_sync_problem{code="replica-dead",severity="warning"} 1');
    } finally {
      await api.stop();
      ctx.dispose();
    }
  });
});
