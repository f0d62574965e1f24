import type { SyncTarget } from '../../src/common/syncRequests.js';
import { runSync } from '../../src/mirror/syncRun.js';
import { pgBackend } from '../../src/postgres/mirror.js';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { testContext } from '../helpers/context.js';
import { type Cluster, createTestDatabase, startCluster } from '../helpers/postgres.js';
import { barePgSync } from './lib/pgBaselineSync.js';
import { type BenchOptions, postgresMissing, ratioOf, type ScenarioResult } from './lib/result.js';
import { fullSyncSize, startRegistrySim, syncOverrides } from './lib/simulator.js';
import { timed } from './lib/timing.js';

const PAGE_SIZE = 1000;

/**
 * Full sync into PostgreSQL: vcu-sync's runSync with the PostgreSQL backend (in this process)
 * against a simulator child serving the same registry as the SQLite full-sync scenario, versus a
 * bare loop in the same run (got + one multi-row unnest upsert per page). Each side gets a
 * throwaway cluster of its own (test/helpers/postgres.ts), so neither inherits the other's dirty
 * buffers and WAL. Skipped, with a line saying so, where no PostgreSQL server is installed.
 */
export async function pgSyncScenario(options: BenchOptions): Promise<ScenarioResult[]> {
  if (postgresMissing('pgsync', options)) return [];
  const size = fullSyncSize(options.quick);
  const total = size.projects + size.issuances + size.units;
  const sim = await startRegistrySim(size, PAGE_SIZE);
  const ctx = testContext({
    overrides: syncOverrides(sim, PAGE_SIZE),
  });
  const opened: PgDatabase[] = [];
  const clusters: Cluster[] = [];
  const open = async () => {
    const cluster = await startCluster();
    clusters.push(cluster);
    const db = await openPostgres((await createTestDatabase(cluster.info)).url, { max: 4 });
    opened.push(db);
    return db;
  };
  const closeAll = async () => {
    for (const db of opened.splice(0)) await db.close();
    for (const cluster of clusters.splice(0)) await cluster.stop();
  };
  try {
    const baseDb = await open();
    options.say(`pgsync: baseline (${total} records)`);
    const base = await timed(() =>
      barePgSync(
        sim.url,
        baseDb.pool,
        [
          { table: 'projects', path: '/integration/v1/projects' },
          { table: 'issuances', path: '/integration/v1/issuances' },
          { table: 'unit_operations', path: '/integration/v1/units' },
        ],
        { pageSize: PAGE_SIZE, apiKey: 'sim-api-key' },
      ),
    );
    if (base.result !== total) throw new Error(`baseline read ${base.result} of ${total} records`);
    await closeAll();

    const db = await open();
    const backend = pgBackend(db.pool);
    options.say('pgsync: vcu-sync');
    const full = await timed(async () => {
      for (const target of ['projects', 'issuances', 'units'] as const satisfies readonly SyncTarget[]) {
        const outcome = await runSync(ctx, target, { backend });
        if (outcome.status !== 'succeeded') throw new Error(`${target}: ${outcome.status}: ${outcome.error}`);
      }
    });
    const stored = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM unit_operations');
    if (Number(stored.rows[0]?.n) !== size.units)
      throw new Error(`mirror holds ${stored.rows[0]?.n} of ${size.units} unit operations`);

    const rate = total / full.seconds;
    const baseRate = total / base.seconds;
    const ratio = ratioOf(rate, baseRate)!;
    return [
      {
        scenario: `full sync into PostgreSQL (${size.projects} projects, ${size.issuances} issuances, ${size.units} units)`,
        measure: 'records/s',
        value: rate,
        baseline: baseRate,
        ratio,
        target: '>= 0.8 x baseline',
        met: ratio >= 0.8,
        notes: `in-process runSync with the PostgreSQL backend, simulator in a child; page size ${PAGE_SIZE}; a throwaway PostgreSQL cluster (fsync off) per side`,
        extra: { records: total, seconds: full.seconds, baselineSeconds: base.seconds },
      },
    ];
  } finally {
    await closeAll();
    ctx.operator().close();
    ctx.dispose();
    await sim.close();
  }
}
