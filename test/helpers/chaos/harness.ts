import { type Simulator, startSimulator } from '../../../src/simulator/index.js';
import { daemonEnv, until, writeToml } from '../../ops/child.js';
import { transfer } from '../../outbox/fixtures.js';
import { cliArgs as sourceCliArgs } from '../cli.js';
import { type Cluster, createTestDatabase, startCluster, type TestDatabase } from '../postgres.js';
import { type Balancer, startBalancer } from './balancer.js';
import { databaseAdmin, type FaultName, type FaultTimes, injectFault } from './faults.js';
import { type Producer, startProducer } from './producer.js';
import { type Replica, replicaSlot } from './replicas.js';
import type { ChaosObservations, PhaseWindow } from './verdict.js';

/**
 * The chaos rig of issue 25, shared by test/postgres/chaos*.test.ts (short phases) and the bench's
 * `chaos` scenario (the issue's phases): a private PostgreSQL cluster, two `vcu-sync run` replicas
 * on one database, the operator simulator deciding every operation by a signed webhook through a
 * balancer in front of both replicas' listeners, and a fixed-rate producer through both APIs.
 * A run is a clean phase, then per fault the fault and a recovery phase, then a settle (producer
 * stopped, every row given time to reach its final state); what it observed goes to ./verdict.ts.
 */

/** The API token of the replicas. */
const TOKEN = 'ops-test-token-0123456789';
const WEBHOOK_PATH = '/webhooks/operator';

/**
 * The replicas' config: no mirror schedules (the chaos is on the outbox and the inbox), leases of
 * 15 s (the least a 5 s operator timeout allows) so a row whose settle a fault swallowed is sent
 * again within the run rather than after the default 2 minutes.
 */
const REPLICA_TOML = `
[sync]
on_startup = false

[sync.schedule]
projects = "off"
issuances = "off"
units = "off"
custody = "off"

[operator]
rate_per_second = 100000
timeout_ms = 5000

[outbox]
lease_seconds = 15
`;

/** Options of {@link startChaos}. */
export interface ChaosOptions {
  /** A folder for the replicas' config file. */
  dir: string;
  /** New operations per second through both APIs (the 100). */
  ratePerSecond: number;
  /** Seconds of the clean phase whose rate the others are compared with. */
  cleanSeconds: number;
  /** Seconds of the recovery phase after each fault. */
  recoverySeconds: number;
  times: FaultTimes;
  /** `node` arguments running `vcu-sync ARGS` (default: the sources through tsx). */
  cliArgs?: (args: string[]) => string[];
  /** The cluster's max_connections, which pool_exhaustion fills (default: 100). */
  maxConnections?: number;
  /** Longest wait, after the last phase, for every row to reach its final state, ms (default: 180000). */
  settleTimeoutMs?: number;
  /** Progress lines (default: none). */
  say?: (line: string) => void;
}

/** A started rig. */
export interface ChaosRig {
  cluster: Cluster;
  database: TestDatabase;
  sim: Simulator;
  balancer: Balancer;
  replicas: readonly Replica[];
  /** Runs the clean phase, then each fault with its recovery, then settles; returns what it saw. */
  run(faults: readonly FaultName[]): Promise<ChaosObservations>;
  /** The replicas' output tails, for a failing test's message. */
  outputs(): string;
  /** Stops the replicas (SIGTERM) and returns their exit codes, then removes everything. */
  close(): Promise<Array<number | null>>;
}

/** Rows not yet in a final state. */
async function unfinishedRows(cluster: Cluster, database: string): Promise<number> {
  return databaseAdmin(cluster.info, database, async (c) => {
    const { rows } = await c.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM outbox WHERE state NOT IN ('approved', 'rejected', 'failed', 'cancelled')`,
    );
    return rows[0]!.n;
  });
}

/** The database's side of the observations: every row, every recorded webhook id. */
async function databaseSide(
  cluster: Cluster,
  database: string,
): Promise<Pick<ChaosObservations, 'rows' | 'recordedWebhookIds'>> {
  return databaseAdmin(cluster.info, database, async (c) => {
    const rows = await c.query<{ ref: string; state: string; finished_at: Date | null }>(
      `SELECT "marketplaceTransactionRef" AS ref, state, finished_at FROM outbox`,
    );
    const ids = await c.query<{ id: string }>('SELECT DISTINCT webhook_id AS id FROM webhook_events');
    return {
      rows: rows.rows.map((r) => ({
        ref: r.ref,
        state: r.state,
        finishedAtMs: r.finished_at?.getTime() ?? null,
      })),
      recordedWebhookIds: new Set(ids.rows.map((r) => r.id)),
    };
  });
}

/** The operator's side: every /notify with a ref, every decision webhook. */
function operatorSide(sim: Simulator): Pick<ChaosObservations, 'notifications' | 'decisions'> {
  const decisions: ChaosObservations['decisions'][number][] = [];
  for (const w of sim.webhooksSent) {
    if (w.type !== 'transaction.approved' && w.type !== 'transaction.rejected') continue;
    const data = w.payload.data as { marketplaceTransactionRef: string };
    decisions.push({
      ref: data.marketplaceTransactionRef,
      id: w.id,
      decided: w.type === 'transaction.approved' ? 'approved' : 'rejected',
      delivered: w.delivered,
    });
  }
  return {
    notifications: sim.notifications.flatMap((n) =>
      n.ref === undefined ? [] : [{ ref: n.ref, atMs: Date.parse(n.receivedAt) }],
    ),
    decisions,
  };
}

export async function startChaos(options: ChaosOptions): Promise<ChaosRig> {
  const say = options.say ?? (() => {});
  const cluster = await startCluster({ maxConnections: options.maxConnections ?? 100 });
  const closers: Array<() => Promise<unknown>> = [() => cluster.stop()];
  const closeAll = async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => {});
  };
  try {
    const database = await createTestDatabase(cluster.info);
    // The replicas' slots first: the balancer and the producer read their URLs when they send.
    const replicas: Replica[] = [];
    const balancer = await startBalancer(() => replicas.map((r) => r.webhookBase()));
    closers.push(() => balancer.close());
    // Decisions retried as an operator would over an outage, about as long as the settle wait: from
    // 200 ms, doubling up to 5 s, 60 tries. 10 tries (about 100 s) can run out when a loaded
    // machine stretches a short kill storm to 37 s: the operator then stops sending decisions the
    // replicas refused with 503 while their transactions were being killed.
    const sim = await startSimulator({
      webhook: {
        url: `${balancer.url}${WEBHOOK_PATH}`,
        policy: 'approve',
        maxAttempts: 60,
        retryBaseMs: 200,
        retryMaxMs: 5_000,
      },
      projects: 3,
      issuances: 3,
      units: 10,
    });
    closers.push(() => sim.close());
    const env = daemonEnv(options.dir, sim.url, writeToml(options.dir, REPLICA_TOML), {
      VCU_SYNC_DATABASE_URL: database.url,
    });
    for (const index of [0, 1])
      replicas.push(replicaSlot({ index, cliArgs: options.cliArgs ?? sourceCliArgs, env }));
    closers.push(async () => {
      for (const r of replicas) await r.kill();
    });
    for (const r of replicas) await r.start();
    say(`chaos: two replicas up on ${database.name}`);

    const run = async (faults: readonly FaultName[]): Promise<ChaosObservations> => {
      const rate = options.ratePerSecond;
      const producer: Producer = startProducer({
        apis: () => replicas.map((r) => r.api()),
        token: TOKEN,
        ratePerSecond: rate,
        refPrefix: 'chaos-',
        // Distinct units: no order key holds one operation behind another (ordering has its own tests).
        operation: (ref, i) => transfer(ref, { unitId: 1_000_000 + i }),
      });
      const windows: PhaseWindow[] = [];
      const phase = async (
        kind: PhaseWindow['kind'],
        fault: FaultName | null,
        body: () => Promise<{ inFlightAtFault: number; detail: string } | undefined>,
      ) => {
        const startMs = Date.now();
        const report = await body();
        windows.push({
          kind,
          fault,
          startMs,
          endMs: Date.now(),
          inFlightAtFault: report?.inFlightAtFault ?? 0,
          detail: report?.detail ?? '',
        });
      };
      const hold = (s: number) =>
        producer.afterTicks(Math.max(1, Math.round(s * rate))).then(() => undefined);
      try {
        await hold(1); // warm-up, not measured
        await phase('clean', null, () => hold(options.cleanSeconds));
        const target = { cluster, database: database.name, replicas, producer, ratePerSecond: rate };
        for (const fault of faults) {
          say(`chaos: ${fault}`);
          await phase('fault', fault, () => injectFault(fault, target, options.times));
          const w = windows.at(-1)!;
          say(`chaos: ${fault} over after ${((w.endMs - w.startMs) / 1000).toFixed(1)} s (${w.detail})`);
          await phase('recovery', fault, () => hold(options.recoverySeconds));
        }
      } finally {
        await producer.stop();
      }
      say(`chaos: settling ${producer.produced.length} operations`);
      const settled = await until(
        'every row in a final state',
        async () => (await unfinishedRows(cluster, database.name)) === 0,
        options.settleTimeoutMs ?? 180_000,
      ).then(
        () => true,
        (err: unknown) => {
          say(`chaos: ${(err as Error).message}`);
          return false;
        },
      );
      // Settled, the last decisions are on their way; not settled, the verdict names what is not.
      if (settled) await sim.webhooksIdle();
      return {
        windows,
        requests: producer.requests,
        produced: producer.produced,
        acknowledged: producer.acknowledged,
        ...(await databaseSide(cluster, database.name)),
        ...operatorSide(sim),
        unexpectedExits: replicas.flatMap((r) => r.exits()).filter((e) => e !== null && !e.killed).length,
        aliveAtEnd: replicas.filter((r) => r.alive()).length,
        replicas: replicas.length,
      };
    };

    return {
      cluster,
      database,
      sim,
      balancer,
      replicas,
      run,
      outputs: () => replicas.map((r) => r.output().slice(-4000)).join('\n'),
      async close() {
        const codes: Array<number | null> = [];
        for (const r of replicas) codes.push(await r.stop());
        await closeAll();
        return codes;
      },
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
