import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { DEFAULT_WEBHOOK_SECRET, type Simulator, startSimulator } from '../../src/simulator/index.js';
import { tempDir } from '../helpers/context.js';
import {
  type Cluster,
  createTestDatabase,
  startCluster,
  type TestDatabase,
  terminateBackend,
  withAdmin,
} from '../helpers/postgres.js';
import { decisionPayload, signed } from '../inbox/helpers.js';
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
 * Issue 25: a `vcu-sync run` replica on PostgreSQL whose server goes away (`pg_ctl stop -m fast`,
 * or every backend of it ended with `pg_terminate_backend`) stays up, says so honestly while the
 * server is away (503 + Retry-After on the API and the webhook listener, /readyz, /status,
 * `vcu-sync status`, the metric, one log line per outage), and when it is back resumes everything
 * without a restart: what was queued before and after goes out, the requests that were in flight
 * are settled, and a decision the operator retries after the outage is recorded.
 * A private cluster for this file: it stops and starts the server.
 */

const TOKEN = 'ops-test-token-0123456789';
const NOTIFY = '/integration/v1/notify';
const authorized = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

let cluster: Cluster;
let sim: Simulator;
let dir: string;
let cleanup: () => void;
const closing: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  cluster = await startCluster();
  sim = await startSimulator({ webhook: { policy: 'none' }, projects: 3, issuances: 3, units: 10 });
  ({ dir, cleanup } = tempDir('vcu-sync-outage-'));
});
afterAll(async () => {
  for (const close of closing.reverse()) await close().catch(() => {});
  await sim?.close();
  await cluster?.stop();
  cleanup?.();
});

/** A replica as the test drives it. */
interface Replica {
  cli: CliChild;
  api: string;
  webhook: string;
  env: NodeJS.ProcessEnv;
}

function eventField(cli: CliChild, event: string, field: string): string {
  const found = cli.events().find((e) => e.event === event);
  if (!found) throw new Error(`no ${event} in:\n${cli.output().slice(-2000)}`);
  return String(found[field]);
}

async function startReplica(database: TestDatabase): Promise<Replica> {
  const env = daemonEnv(dir, sim.url, writeToml(dir, daemonToml({ onStartup: false })), {
    VCU_SYNC_DATABASE_URL: database.url,
  });
  const cli = spawnCli(['run'], env);
  closing.push(async () => {
    if (cli.child.exitCode === null) cli.child.kill('SIGKILL');
    await cli.exited;
  });
  await untilEvent(cli, 'daemon.ready', 60_000);
  return {
    cli,
    env,
    api: `http://${eventField(cli, 'api.listening', 'listen')}`,
    webhook: `http://${eventField(cli, 'webhook.listening', 'listen')}/webhooks/operator`,
  };
}

/** A pool of the test's own on the replica's database (it survives the outage too). */
async function testPool(database: TestDatabase): Promise<PgDatabase> {
  const db = await openPostgres(database.url, { migrate: false, max: 2 });
  closing.push(() => db.close());
  return db;
}

async function post(url: string, body: unknown): Promise<{ status: number; retryAfter: string | null }> {
  const res = await fetch(url, { method: 'POST', headers: authorized, body: JSON.stringify(body) });
  await res.arrayBuffer();
  return { status: res.status, retryAfter: res.headers.get('retry-after') };
}

async function sendDecision(replica: Replica, ref: string): Promise<Response> {
  const { headers, body } = signed(decisionPayload(ref, 'approved'), {
    id: `msg_${ref}`,
    atMs: Date.now(),
    secret: DEFAULT_WEBHOOK_SECRET,
  });
  return fetch(replica.webhook, { method: 'POST', headers, body });
}

async function stateOf(db: PgDatabase, ref: string): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ state: string }>(
    `SELECT state FROM outbox WHERE "marketplaceTransactionRef" = $1`,
    [ref],
  );
  return rows[0]?.state;
}

const alive = (replica: Replica) =>
  replica.cli.child.exitCode === null && replica.cli.child.signalCode === null;

function assertAlive(replica: Replica): void {
  if (!alive(replica)) throw new Error(`the replica exited:\n${replica.cli.output().slice(-3000)}`);
}

/** Waits until every ref is at least accepted (or decided) and reached the operator. */
async function untilDelivered(replica: Replica, db: PgDatabase, refs: readonly string[]): Promise<void> {
  await until(
    () => `all of ${refs.join(', ')} delivered; replica:\n${replica.cli.output().slice(-3000)}`,
    async () => {
      assertAlive(replica);
      const { rows } = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM outbox
          WHERE "marketplaceTransactionRef" = ANY($1) AND state IN ('accepted', 'approved')`,
        [refs],
      );
      return rows[0]?.n === refs.length;
    },
    120_000,
  );
  const received = new Set(sim.notifications.map((n) => n.ref));
  expect(refs.filter((ref) => !received.has(ref))).toEqual([]);
}

const countEvents = (replica: Replica, event: string) =>
  replica.cli.events().filter((e) => e.event === event).length;

describe('a replica whose PostgreSQL goes away', () => {
  it('pg_ctl stop -m fast: stays up, answers 503 and says why while the server is down, resumes everything after', async () => {
    const database = await createTestDatabase(cluster.info);
    const replica = await startReplica(database);
    const db = await testPool(database);

    // Accepted before the outage: its decision arrives during it.
    expect((await post(`${replica.api}/v1/operations`, transfer('out-decided'))).status).toBe(201);
    await untilDelivered(replica, db, ['out-decided']);
    // Queued before: two of them hang at the operator while the server stops (in flight).
    sim.faults.next(2, 'latency', { latencyMs: 3_000, pathPrefix: NOTIFY });
    const before = ['out-before-1', 'out-before-2', 'out-before-3'];
    for (const ref of before)
      expect((await post(`${replica.api}/v1/operations`, transfer(ref))).status).toBe(201);
    await until('two notifications in flight', () => sim.faults.pending().length === 0);

    await cluster.halt('fast');
    await untilEvent(replica.cli, 'db.unreachable');

    // The API: enqueue and reads answer 503 with Retry-After.
    const refused = await post(`${replica.api}/v1/operations`, transfer('out-refused'));
    expect(refused.status).toBe(503);
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    const read = await fetch(`${replica.api}/v1/operations?limit=5`, { headers: authorized });
    await read.arrayBuffer();
    expect(read.status).toBe(503);
    expect(Number(read.headers.get('retry-after'))).toBeGreaterThan(0);
    // The webhook listener: a decision it could not store is not acknowledged; the operator retries.
    const decision = await sendDecision(replica, 'out-decided');
    expect(decision.status, await decision.text()).toBe(503);
    expect(Number(decision.headers.get('retry-after'))).toBeGreaterThan(0);
    // Readiness, status, metrics and the CLI say the database cannot be reached.
    const ready = await fetch(`${replica.api}/readyz`);
    expect(ready.status).toBe(503);
    const readiness = (await ready.json()) as { reasons: string[] };
    expect(readiness.reasons.some((r) => r.startsWith('database-unreachable'))).toBe(true);
    const status = await fetch(`${replica.api}/status`, { headers: authorized });
    expect(status.status).toBe(503);
    const health = (await status.json()) as { problems: Array<{ code: string; severity: string }> };
    expect(health.problems).toContainEqual(
      expect.objectContaining({ code: 'database-unreachable', severity: 'critical' }),
    );
    const metrics = await (await fetch(`${replica.api}/metrics`, { headers: authorized })).text();
    expect(metrics).toMatch(/^vcu_sync_database_up 0$/m);
    expect(metrics).toMatch(/^vcu_sync_problem\{code="database-unreachable",severity="critical"\} 1$/m);
    const cli = spawnCli(['status', '--json'], replica.env);
    expect(await cli.exited, cli.output()).toBe(2);
    const cliHealth = JSON.parse(cli.output()) as { problems: Array<{ code: string }> };
    expect(cliHealth.problems.map((p) => p.code)).toContain('database-unreachable');
    assertAlive(replica);

    await cluster.resume();
    await untilEvent(replica.cli, 'db.reachable');
    await until('/readyz 200 again', async () => {
      assertAlive(replica);
      const res = await fetch(`${replica.api}/readyz`);
      await res.arrayBuffer();
      return res.status === 200;
    });

    // Queued after: goes out with everything queued before; the operator's retried decision is recorded.
    const after = ['out-after-1', 'out-after-2'];
    for (const ref of after)
      expect((await post(`${replica.api}/v1/operations`, transfer(ref))).status).toBe(201);
    const retried = await sendDecision(replica, 'out-decided');
    expect(retried.status, await retried.text()).toBe(200);
    expect(await stateOf(db, 'out-decided')).toBe('approved');
    await untilDelivered(replica, db, [...before, ...after]);
    // Sent once each: the in-flight ones were settled when the server came back, not sent again.
    for (const ref of before) expect(sim.notifications.filter((n) => n.ref === ref)).toHaveLength(1);
    expect(await stateOf(db, 'out-refused')).toBeUndefined();

    const up = await (await fetch(`${replica.api}/metrics`, { headers: authorized })).text();
    expect(up).toMatch(/^vcu_sync_database_up 1$/m);
    expect(up).not.toContain('code="database-unreachable"');
    // The outage said once each way, not once per query.
    expect(countEvents(replica, 'db.unreachable')).toBe(1);
    expect(countEvents(replica, 'db.reachable')).toBe(1);
    const back = replica.cli.events().find((e) => e.event === 'db.reachable');
    expect(Number(back?.outageMs)).toBeGreaterThan(0);
    expect(countEvents(replica, 'outbox.loop.error')).toBeLessThanOrEqual(1);

    replica.cli.child.kill('SIGTERM');
    expect(await replica.cli.exited, replica.cli.output().slice(-3000)).toBe(0);
  }, 300_000);

  it('pg_terminate_backend of every one of its sessions: stays up and goes on with the LISTEN, the liveness lock and the outbox', async () => {
    const database = await createTestDatabase(cluster.info);
    const replica = await startReplica(database);
    const db = await testPool(database);
    expect((await post(`${replica.api}/v1/operations`, transfer('kill-before'))).status).toBe(201);
    await untilDelivered(replica, db, ['kill-before']);

    // Every session of the replica: pooled (the LISTEN among them) and its liveness session.
    const sessions = await withAdmin(cluster.info, async (admin) => {
      const { rows } = await admin.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name LIKE 'vcu-sync%'`,
        [database.name],
      );
      return rows.map((r) => r.pid);
    });
    // The pool's idle connections, the LISTEN and the liveness session at least.
    expect(sessions.length).toBeGreaterThanOrEqual(3);
    for (const pid of sessions) await terminateBackend(cluster.info, pid);

    await untilEvent(replica.cli, 'replica.liveness.retaken');
    await untilEvent(replica.cli, 'feed.listen_lost');
    // The feed's LISTEN is back: a commit through the API wakes a long-poll waiting on it.
    const head = (await (
      await fetch(`${replica.api}/v1/changes?after=0&limit=1000`, { headers: authorized })
    ).json()) as {
      head: number;
    };
    const waiting = fetch(`${replica.api}/v1/changes?after=${head.head}&limit=10&wait=30`, {
      headers: authorized,
    });
    let enqueued = 0;
    await until('an enqueue accepted after the kill', async () => {
      assertAlive(replica);
      enqueued = (await post(`${replica.api}/v1/operations`, transfer('kill-after'))).status;
      return enqueued === 201 || enqueued === 200;
    });
    const woken = (await (await waiting).json()) as { items: Array<{ seq: number }> };
    expect(woken.items.length).toBeGreaterThan(0);
    await untilDelivered(replica, db, ['kill-before', 'kill-after']);
    assertAlive(replica);
    replica.cli.child.kill('SIGTERM');
    expect(await replica.cli.exited, replica.cli.output().slice(-3000)).toBe(0);
  }, 300_000);
});
