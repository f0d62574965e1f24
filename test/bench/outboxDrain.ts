import http from 'node:http';
import got from 'got';
import { UNSENT_SQL } from '../../src/db/schema/operationStates.js';
import { claimAheadRows } from '../../src/outbox/claimAhead.js';
import { createDispatcherComponent } from '../../src/outbox/dispatcher.js';
import { testContext } from '../helpers/context.js';
import { enqueueOperation, sqliteDispatcher, tokenization } from '../outbox/fixtures.js';
import { cpuSeconds } from './lib/feedClients.js';
import type { BenchOptions, ScenarioResult } from './lib/result.js';
import { inRoundOrder, type RatePair, roundsFor, summarizeRates } from './lib/rounds.js';
import { type SimChild, startSimChild } from './lib/simulator.js';
import { median, timed, until } from './lib/timing.js';

const CONCURRENCY = 8;
/** POSTs the simulator answers before anything is timed. */
const WARM_UP = 30_000;
const SYNCHRONOUS = 'full';
/** Rows of the untimed round that warms both sides' code before the timed ones. */
const WARM_ROUND = 3_000;

/** The same bodies, POSTed by a bare got loop with `concurrency` requests in flight. */
async function barePostLoop(url: string, bodies: readonly string[], concurrency: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const client = got.extend({
    agent: { http: agent },
    retry: { limit: 0 },
    timeout: { request: 30_000 },
    headers: { apikey: 'sim-api-key', 'content-type': 'application/json' },
  });
  let next = 0;
  const worker = async () => {
    while (next < bodies.length) {
      const body = bodies[next++]!;
      const res = await client.post(`${url}/integration/v1/notify`, { body });
      if (res.statusCode >= 300) throw new Error(`baseline POST answered ${res.statusCode}`);
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    agent.destroy();
  }
}

/** CPU per row of each process, microseconds (user + system, every thread). */
interface RowCpu {
  harness: number;
  simulator: number;
}

/**
 * `work` with the CPU it took per row, in this process and in the simulator child: on two cores
 * the two share the machine, so the rates follow their sum, and unlike the rates it hardly moves
 * with the host's other load.
 */
async function withCpu<T>(
  sim: SimChild,
  rows: number,
  work: () => Promise<T>,
): Promise<{ value: T; cpu: RowCpu }> {
  const pid = sim.child.proc.pid!;
  const [own0, sim0] = [process.cpuUsage(), await cpuSeconds(pid)];
  const value = await work();
  const own = process.cpuUsage(own0);
  const simulator = ((await cpuSeconds(pid)) - sim0) * 1e6;
  return { value, cpu: { harness: (own.user + own.system) / rows, simulator: simulator / rows } };
}

/** One round's drain and bare loop, each in ops/s, on a fresh database, in the round's order. */
async function drainRound(
  sim: SimChild,
  round: number,
  n: number,
  say: (line: string) => void,
): Promise<RatePair & { cpu: { baseline: RowCpu; ours: RowCpu } }> {
  const ctx = testContext({
    overrides: {
      'operator.url': sim.url,
      'operator.api_key': 'sim-api-key',
      'operator.marketplace_id': 'mkt-bench',
      'operator.rate_per_second': 100_000,
      'outbox.concurrency': CONCURRENCY,
      'database.synchronous': SYNCHRONOUS,
    },
  });
  try {
    for (let i = 0; i < n; i++) {
      // Distinct units and issuances: no ordering constraint serializes the queue.
      const result = enqueueOperation(
        ctx,
        tokenization(`bench-drain-${round}-${i}`, { unitId: 100_000 + i, issuanceId: 200_000 + i }),
      );
      if (result.status !== 201) throw new Error(`enqueue ${i} answered ${result.status}`);
    }
    const bodies = (
      ctx.database.sqlite.prepare('SELECT body FROM outbox ORDER BY id').all() as { body: string }[]
    ).map((r) => r.body);

    const bare = async () => {
      say(`outbox drain: baseline (${n} POSTs, concurrency ${CONCURRENCY})`);
      const { value: base, cpu } = await withCpu(sim, n, () =>
        timed(() => barePostLoop(sim.url, bodies, CONCURRENCY)),
      );
      await sim.admin('DELETE', '/_sim/notifications');
      return { rate: n / base.seconds, cpu };
    };
    const dispatcher = async () => {
      say('outbox drain: dispatcher');
      // The wait asks whether any row is still unsent (one probe of the state index) rather than
      // counting them: it runs every 5 ms on the dispatcher's own loop, so it reads one index entry
      // however many rows are left.
      const unsent = ctx.database.sqlite.prepare(
        `SELECT 1 AS n FROM outbox INDEXED BY outbox_state_id_idx WHERE state IN ${UNSENT_SQL} LIMIT 1`,
      );
      const component = createDispatcherComponent(ctx, {
        ...sqliteDispatcher(ctx),
        // As the daemon's dispatcher claims (app/sqliteDaemon.ts, app/dispatcherWorker.ts).
        claimAhead: claimAheadRows(ctx.config),
      });
      const { value: drain, cpu } = await withCpu(sim, n, () =>
        timed(async () => {
          await component.start();
          await until('every row sent', () => unsent.get() === undefined, 600_000, 5);
        }),
      );
      await component.stop();
      await sim.admin('DELETE', '/_sim/notifications');
      const accepted = ctx.database.sqlite.prepare(
        "SELECT count(*) AS n FROM outbox WHERE state = 'accepted'",
      );
      const settled = (accepted.get() as { n: number }).n;
      if (settled !== n) throw new Error(`outbox drain: ${settled} of ${n} accepted`);
      return { rate: n / drain.seconds, cpu };
    };
    const { baseline, ours } = await inRoundOrder(round, bare, dispatcher);
    return { baseline: baseline.rate, value: ours.rate, cpu: { baseline: baseline.cpu, ours: ours.cpu } };
  } finally {
    ctx.operator().close();
    ctx.dispose();
  }
}

/**
 * Drains N queued operations through the dispatcher component (in this process) to the simulator
 * child's /notify, versus a bare got POST loop of the same bodies at the same concurrency, in
 * rounds (./lib/rounds.ts), each on a fresh database.
 */
export async function outboxDrainScenario(options: BenchOptions): Promise<ScenarioResult[]> {
  const n = options.quick ? 500 : 10_000;
  const rounds = roundsFor(options.quick);
  const sim = await startSimChild(['--policy', 'none', '--notify-status', '202']);
  try {
    // The simulator answers faster as it runs (its code optimized, its heap grown): timed first
    // against it cold, the bare loop made 4,600-5,000 POSTs a second, and 7,400-8,300 in later
    // rounds; after 20,000 untimed POSTs, 6,100. Whichever side ran first was timed against a
    // slower operator: before rounds, that was always the baseline.
    const warmUp = options.quick ? n : WARM_UP;
    options.say(`outbox drain: warming the simulator (${warmUp} POSTs, untimed)`);
    const warm = Array.from({ length: warmUp }, (_, i) => JSON.stringify(tokenization(`bench-warm-${i}`)));
    await barePostLoop(sim.url, warm, CONCURRENCY);
    await sim.admin('DELETE', '/_sim/notifications');
    // The warm-up above also warmed the bare loop's code (got, 30,000 POSTs in this process); the
    // dispatcher's ran cold through the first round, at 1.3-1.5x the CPU a row of the later ones
    // (docs/benchmarks.md, "thirteenth round"). One untimed round of both sides warms it too.
    options.say(`outbox drain: warming the dispatcher (${WARM_ROUND} rows each side, untimed)`);
    await drainRound(sim, 0, options.quick ? n : WARM_ROUND, options.say);
    const pairs: Array<Awaited<ReturnType<typeof drainRound>>> = [];
    for (let round = 1; round <= rounds; round++) pairs.push(await drainRound(sim, round, n, options.say));
    const { value, baseline, ratio, spread } = summarizeRates(pairs);
    const cpuOf = (side: 'baseline' | 'ours', proc: keyof RowCpu) =>
      median(pairs.map((p) => p.cpu[side][proc])).toFixed(0);
    const cpu = `CPU per row (us, medians), this process + the simulator: dispatcher ${cpuOf('ours', 'harness')} + ${cpuOf('ours', 'simulator')}, bare loop ${cpuOf('baseline', 'harness')} + ${cpuOf('baseline', 'simulator')}`;
    return [
      {
        scenario: `outbox drain, ${n} operations`,
        measure: 'ops/s',
        value,
        baseline,
        ratio,
        target: '>= 0.8 x baseline',
        met: ratio >= 0.8,
        notes: `median of ${rounds} round(s), each on a fresh database, the baseline first in odd rounds (${spread}); in-process dispatcher, simulator in a child; concurrency ${CONCURRENCY}; synchronous=${SYNCHRONOUS}; ${cpu}`,
      },
    ];
  } finally {
    await sim.close();
  }
}
