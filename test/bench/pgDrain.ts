import type { AttemptRecord, Claim, SettleStep } from '../../src/operations/storeSeam.js';
import { createDispatcherComponent } from '../../src/outbox/dispatcher.js';
import { prepareInsert } from '../../src/outbox/prepareInsert.js';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { PgOperationsStore } from '../../src/postgres/operationsStore.js';
import { testContext } from '../helpers/context.js';
import { type Cluster, createTestDatabase, startCluster } from '../helpers/postgres.js';
import { tokenization } from '../outbox/fixtures.js';
import { barePgDrain } from './lib/pgBaselineDrain.js';
import { type BenchOptions, postgresMissing, ratioOf, type ScenarioResult } from './lib/result.js';
import { startSimChild } from './lib/simulator.js';
import { timed } from './lib/timing.js';
import { daemonDrainRows } from './pgDrainDaemon.js';

const CONCURRENCY = 8;
const OWNER = 'bench-pg-drain';
/** Rows per insert statement while queueing (not measured). */
const QUEUE_BATCH = 1_000;

/** The PostgreSQL store, counting accepted settles so the drain's end is seen without polling the database. */
class CountingStore extends PgOperationsStore {
  settled = 0;
  private waiter: { n: number; resolve: () => void } | null = null;

  override async settle(claim: Claim, attempt: AttemptRecord, step: SettleStep): Promise<boolean> {
    const done = await super.settle(claim, attempt, step);
    if (done && step.to === 'accepted') this.settled++;
    if (this.waiter && this.settled >= this.waiter.n) this.waiter.resolve();
    return done;
  }

  /** Resolves once `n` rows have been settled accepted. */
  accepted(n: number): Promise<void> {
    if (this.settled >= n) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiter = { n, resolve };
    });
  }
}

/**
 * Drains N queued operations from a PostgreSQL outbox: the real Dispatcher on PgOperationsStore
 * (in this process) to the simulator child's /notify answering 202, versus a bare loop in the same
 * run (claim k with one UPDATE ... SKIP LOCKED ... RETURNING, POST them, settle with one
 * multi-row UPDATE) at the same concurrency against the same receiver. Each side gets a throwaway
 * cluster of its own, queued by the store's own insert. Skipped where no PostgreSQL is installed.
 */
export async function pgDrainScenario(options: BenchOptions): Promise<ScenarioResult[]> {
  if (postgresMissing('pgdrain', options)) return [];
  const n = options.quick ? 500 : 10_000;
  const sim = await startSimChild(['--policy', 'none', '--notify-status', '202']);
  const ctx = testContext({
    overrides: {
      'operator.url': sim.url,
      'operator.api_key': 'sim-api-key',
      'operator.marketplace_id': 'mkt-bench',
      'operator.rate_per_second': 100_000,
      'outbox.concurrency': CONCURRENCY,
    },
  });
  const opened: PgDatabase[] = [];
  const clusters: Cluster[] = [];
  const closeAll = async () => {
    for (const db of opened.splice(0)) await db.close();
    for (const cluster of clusters.splice(0)) await cluster.stop();
  };
  /** A fresh cluster and database holding the N operations queued. */
  const queued = async (): Promise<{ db: PgDatabase; store: CountingStore }> => {
    const cluster = await startCluster();
    clusters.push(cluster);
    const db = await openPostgres((await createTestDatabase(cluster.info)).url);
    opened.push(db);
    const store = new CountingStore(db.pool);
    const now = new Date().toISOString();
    for (let start = 0; start < n; start += QUEUE_BATCH) {
      const batch = [];
      for (let i = start; i < Math.min(n, start + QUEUE_BATCH); i++) {
        // Distinct units and issuances: no ordering constraint serializes the queue.
        const prepared = prepareInsert(
          ctx,
          tokenization(`bench-pg-drain-${i}`, { unitId: 100_000 + i, issuanceId: 200_000 + i }),
        );
        if ('errors' in prepared) throw new Error(`invalid fixture: ${JSON.stringify(prepared.errors)}`);
        batch.push(prepared);
      }
      await store.insert(batch, now);
    }
    await db.pool.query('ANALYZE outbox');
    return { db, store };
  };
  const acceptedIn = async (db: PgDatabase): Promise<number> => {
    const { rows } = await db.pool.query<{ n: string }>(
      "SELECT count(*) AS n FROM outbox WHERE state = 'accepted'",
    );
    return Number(rows[0]?.n);
  };
  try {
    const baseSide = await queued();
    options.say(`pgdrain: baseline (${n} operations, concurrency ${CONCURRENCY})`);
    const base = await timed(() =>
      barePgDrain(`${sim.url}${ctx.config.operator.notify_path}`, baseSide.db.pool, {
        concurrency: CONCURRENCY,
        apiKey: 'sim-api-key',
      }),
    );
    if (base.result !== n || (await acceptedIn(baseSide.db)) !== n)
      throw new Error(`baseline settled ${base.result} of ${n} operations`);
    await closeAll();
    await sim.admin('DELETE', '/_sim/notifications');

    const { db, store } = await queued();
    options.say('pgdrain: dispatcher on PgOperationsStore');
    const component = createDispatcherComponent(ctx, { store, hooks: null, owner: OWNER });
    const drain = await timed(async () => {
      await component.start();
      await store.accepted(n);
    });
    await component.stop();
    if ((await acceptedIn(db)) !== n) throw new Error(`dispatcher left ${n - (await acceptedIn(db))} rows`);

    const rate = n / drain.seconds;
    const baseRate = n / base.seconds;
    const ratio = ratioOf(rate, baseRate)!;
    await closeAll();
    const daemonRows = await daemonDrainRows(options, sim, ctx);
    return [
      {
        scenario: `outbox drain on PostgreSQL, ${n} operations`,
        measure: 'ops/s',
        value: rate,
        baseline: baseRate,
        ratio,
        target: '>= 0.8 x baseline',
        met: ratio >= 0.8,
        notes: `in-process dispatcher on PgOperationsStore (pool of 10), simulator in a child; concurrency ${CONCURRENCY}; baseline claims k with one UPDATE ... SKIP LOCKED and settles with one multi-row UPDATE; a throwaway PostgreSQL cluster (fsync off) per side`,
        extra: { operations: n, seconds: drain.seconds, baselineSeconds: base.seconds },
      },
      ...daemonRows,
    ];
  } finally {
    await closeAll();
    ctx.operator().close();
    ctx.dispose();
    await sim.close();
  }
}
