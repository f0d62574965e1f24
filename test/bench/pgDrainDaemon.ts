import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AppContext } from '../../src/context.js';
import type { NewOperation } from '../../src/operations/storeSeam.js';
import { prepareInsert } from '../../src/outbox/prepareInsert.js';
import { createTestDatabase, startCluster } from '../helpers/postgres.js';
import type { PgBossOutboxJob } from './children/pgBossOutbox.js';
import { RECONCILE_OFF } from './lib/benchConfig.js';
import { cliRunner } from './lib/build.js';
import { loadPgBoss, pgBossDrain } from './lib/pgBossDrain.js';
import { type DaemonDrain, daemonDrain, drainOperations } from './lib/pgDaemonDrain.js';
import { runJsonChild, tsx } from './lib/proc.js';
import { type BenchOptions, ratioOf, type ScenarioResult } from './lib/result.js';
import type { SimChild } from './lib/simulator.js';
import { median } from './lib/timing.js';

/** The issue's marketplace: its operations fall on 50 units. */
const UNITS = 50;
const CONCURRENCY = 8;
const API_CLIENTS = 16;
/** pg-boss as the issue ran it: 8 fetchers, batches of 32. */
const FETCHERS = 8;
const BATCH = 32;
/** Rounds of pg-boss and the daemon's queued drains, in turn. */
const ROUNDS = 3;

/** The operations as the store queues them (validated, hashed, wire bodies). */
function prepared(ctx: Pick<AppContext, 'config'>, ops: readonly Record<string, unknown>[]): NewOperation[] {
  return ops.map((op) => {
    const p = prepareInsert(ctx, op);
    if ('errors' in p) throw new Error(`invalid fixture: ${JSON.stringify(p.errors)}`);
    return p;
  });
}

/** How pg-boss drains the operations, as the issue ran it. */
interface PgBossRuns {
  /** Seconds in a process of its own, started fresh as the daemon is (the baseline). */
  ownProcess(): Promise<number>;
  /** Seconds in the bench's process, whose pg and got already served the in-process rows (reported). */
  inProcess(): Promise<number>;
}

/**
 * pg-boss used as an outbox (the operations inserted in bulk, then {@link FETCHERS} fetchers of
 * {@link BATCH} POSTing one at a time), each run on a fresh database. Null when pg-boss is not
 * installed.
 */
async function pgBossRuns(
  options: BenchOptions,
  on: { database: () => Promise<string>; notifyUrl: string; bodies: (tag: string) => string[] },
): Promise<PgBossRuns | null> {
  const boss = await loadPgBoss();
  if (!('PgBoss' in boss)) {
    options.say(`pgdrain: pg-boss baseline skipped: ${boss.missing}`);
    return null;
  }
  const common = { notifyUrl: on.notifyUrl, apiKey: 'sim-api-key', fetchers: FETCHERS, batchSize: BATCH };
  let runs = 0;
  return {
    async ownProcess() {
      options.say(`pgdrain: pg-boss as an outbox in its own process (${FETCHERS} fetchers of ${BATCH})`);
      const bodiesFile = path.join(options.dir, `pgboss-bodies-${++runs}.json`);
      writeFileSync(bodiesFile, JSON.stringify(on.bodies(`boss-${runs}`)));
      const job: PgBossOutboxJob = { ...common, url: await on.database(), bodiesFile };
      const own = await runJsonChild<{ seconds: number }>(
        tsx('test/bench/children/pgBossOutbox.ts', [JSON.stringify(job)]),
      );
      return own.seconds;
    },
    async inProcess() {
      options.say('pgdrain: pg-boss as an outbox in the bench process');
      return pgBossDrain(boss.PgBoss, {
        ...common,
        url: await on.database(),
        bodies: on.bodies('boss-here'),
      });
    },
  };
}

/**
 * The drain through the installed daemon (issue 30, item 1), side by side on one throwaway
 * cluster, each on a fresh database: pg-boss used as an outbox (the operations inserted in bulk,
 * then 8 fetchers of 32 POSTing one at a time) and `vcu-sync run` draining the same operations
 * queued before it starts (50 units, then one unit per operation), in {@link ROUNDS} rounds; then
 * `vcu-sync run` draining while 16 API clients enqueue them (both ways again). Not in `--quick` runs.
 */
export async function daemonDrainRows(
  options: BenchOptions,
  sim: SimChild,
  ctx: Pick<AppContext, 'config'>,
): Promise<ScenarioResult[]> {
  if (options.quick) {
    // Four daemons started from the sources would take `--quick` (whose run a test executes, within
    // 180 s) well past its minute.
    options.say('pgdrain: the rows through vcu-sync run and pg-boss run only without --quick');
    return [];
  }
  const n = 2_000;
  const cli = await cliRunner(options.quick, options.say);
  const cluster = await startCluster();
  try {
    const fresh = async () => createTestDatabase(cluster.info);
    const onUnits = (tag: string, units: number) => drainOperations(tag, n, units);
    const bodies = (tag: string, units: number) => onUnits(tag, units).map((op) => JSON.stringify(op));
    const boss = await pgBossRuns(options, {
      database: async () => (await fresh()).url,
      notifyUrl: `${sim.url}${ctx.config.operator.notify_path}`,
      bodies: (tag) => prepared(ctx, onUnits(tag, UNITS)).map((op) => op.body),
    });
    const run = async (tag: string, units: number, how: 'queued' | 'api'): Promise<DaemonDrain> => {
      options.say(`pgdrain: vcu-sync run, ${n} operations on ${units} units, ${how}`);
      const common = {
        cli,
        dir: options.dir,
        tag,
        operatorUrl: sim.url,
        units,
        clients: API_CLIENTS,
        concurrency: CONCURRENCY,
      };
      const d = await daemonDrain({
        ...common,
        database: await fresh(),
        ...(how === 'queued'
          ? { queued: prepared(ctx, onUnits(tag, units)) }
          : { bodies: bodies(tag, units) }),
      });
      options.say(
        `pgdrain: ${tag}: drain ${d.drainSeconds.toFixed(2)} s, enqueue ${d.enqueueSeconds.toFixed(2)} s; server waits: ${d.waits}`,
      );
      return d;
    };
    const rate = (d: DaemonDrain) => d.operations / d.drainSeconds;
    // The host's load moves from one run to the next (docs/benchmarks.md, ninth round): pg-boss and
    // the daemon's two queued drains run in turn, and each row gives the median of its rounds.
    const rounds: Array<{ bossRate: number | null; units50: DaemonDrain; each: DaemonDrain }> = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const bossRate = boss === null ? null : n / (await boss.ownProcess());
      const units50 = await run(`queued-50-${round}`, UNITS, 'queued');
      const each = await run(`queued-each-${round}`, n, 'queued');
      rounds.push({ bossRate, units50, each });
    }
    const inProcess = boss === null ? null : await boss.inProcess();
    const api50 = await run('api-50', UNITS, 'api');
    const apiEach = await run('api-each', n, 'api');
    const how = `\`vcu-sync run\` child (${cli.kind}) on a throwaway cluster (fsync off), concurrency ${CONCURRENCY}, simulator child answering 202; each run on a fresh database, no ANALYZE, the operations' units and issuances in the mirror's custody (${RECONCILE_OFF ? 'the reconciler off, BENCH_RECONCILE=0' : 'the reconciler on, as by default'})`;
    const bossRates = rounds.map((r) => r.bossRate).filter((r): r is number => r !== null);
    const bossRate = bossRates.length === 0 ? null : median(bossRates);
    const bossNote =
      bossRate === null
        ? 'pg-boss not installed: no baseline'
        : `baseline: pg-boss in a process of its own, ${FETCHERS} fetchers x batches of ${BATCH}, one POST at a time, batch completed, median ${bossRate.toFixed(0)} ops/s (in the bench's warm process: ${(n / inProcess!).toFixed(0)} ops/s)`;
    const queuedRow = (pick: (r: (typeof rounds)[number]) => DaemonDrain, name: string): ScenarioResult => {
      const rates = rounds.map((r) => rate(pick(r)));
      const ratios = rounds.map((r) => ratioOf(rate(pick(r)), r.bossRate));
      const ratio = ratios.includes(null) ? null : median(ratios as number[]);
      return {
        scenario: `drain through vcu-sync run on PostgreSQL, ${n} queued, ${name}`,
        measure: 'ops/s',
        value: median(rates),
        baseline: bossRate,
        ratio,
        target: '>= 1 x pg-boss',
        met: ratio !== null && ratio >= 1,
        notes: `median of ${ROUNDS} rounds, each pg-boss then the daemon (ratio in each round: ${ratios.map((r) => (r === null ? '-' : `${r.toFixed(2)}x`)).join(', ')}; daemon ops/s ${rates.map((r) => r.toFixed(0)).join(', ')}); from the first attempt to the last acceptance; queued by the store's insert before the daemon started; ${how}; ${bossNote}; server waits sampled: ${rounds.map((r) => pick(r).waits).join(' | ')}`,
        extra: {
          seconds: median(rounds.map((r) => pick(r).drainSeconds)),
          roundRatios: ratios.map((r) => (r === null ? '-' : r.toFixed(2))).join('/'),
          ...(bossRate === null || inProcess === null
            ? {}
            : { baselineSeconds: n / bossRate, baselineInProcessSeconds: inProcess }),
        },
      };
    };
    const apiRatio = ratioOf(rate(api50), rate(apiEach))!;
    return [
      queuedRow((r) => r.units50, `${UNITS} units`),
      queuedRow((r) => r.each, 'one unit per operation'),
      {
        scenario: `enqueue and drain through the API on PostgreSQL, ${n} on ${UNITS} units`,
        measure: 'ops/s',
        value: rate(api50),
        baseline: rate(apiEach),
        ratio: apiRatio,
        target: '>= 0.8 x one unit per operation',
        met: apiRatio >= 0.8,
        notes: `from the first row's creation to the last acceptance, ${API_CLIENTS} API clients POSTing while the daemon drains; baseline: the same with one unit per operation; ${how}`,
        extra: { seconds: api50.drainSeconds, baselineSeconds: apiEach.drainSeconds },
      },
      {
        scenario: `enqueue through the API on PostgreSQL, ${API_CLIENTS} clients`,
        measure: 'req/s',
        value: n / api50.enqueueSeconds,
        baseline: null,
        ratio: null,
        target: '(reported)',
        met: true,
        notes: `POST /v1/operations, each client one request at a time, the dispatcher draining meanwhile (${UNITS} units; ${(n / apiEach.enqueueSeconds).toFixed(0)} req/s with one unit per operation); ${how}`,
        extra: { seconds: api50.enqueueSeconds },
      },
    ];
  } finally {
    await cluster.stop();
  }
}
