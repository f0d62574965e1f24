import path from 'node:path';
import { freePort } from '../helpers/net.js';
import {
  daemonEnv,
  QUIET_DAEMON_TOML,
  RECONCILE_OFF,
  RECONCILE_TOML,
  writeConfig,
} from './lib/benchConfig.js';
import { cliRunner } from './lib/build.js';
import { commitWaits } from './lib/commitWaits.js';
import { type Latencies, type PacedLoadJob, RATE } from './lib/pacedLoad.js';
import { runJsonChild, spawnNode, tsx, waitForHealthz } from './lib/proc.js';
import type { BenchOptions, ScenarioResult } from './lib/result.js';
import { type SimChild, startRegistrySim, startSimChild } from './lib/simulator.js';

/** BENCH_ENQUEUE_ROWS=paused,draining runs those daemon rows only (durable, paused, draining, sync). */
const ROWS = new Set((process.env.BENCH_ENQUEUE_ROWS ?? 'durable,paused,draining,sync').split(','));

const LOOP_DELAY_PRELOAD = path.join(import.meta.dirname, 'lib/loopDelay.mjs');

/** The client in a process of its own (./lib/pacedLoad.ts says why), its young generation 64 MB. */
function pacedLoad(port: number, seconds: number, tag: string, path = '/v1/operations'): Promise<Latencies> {
  const job: PacedLoadJob = { port, seconds, tag, path };
  return runJsonChild<Latencies>([
    '--max-semi-space-size=64',
    ...tsx('test/bench/children/pacedLoad.ts', [JSON.stringify(job)]),
  ]);
}

/** The same load against `vcu-sync run` in a child process whose dispatcher sends to `sim`. */
async function daemonLoad(
  options: BenchOptions,
  sim: SimChild,
  tag: string,
  seconds: number,
  synchronous: string,
  dispatcherThread: boolean,
  syncOnStart = false,
): Promise<Latencies> {
  const cli = await cliRunner(options.quick, options.say);
  const [apiPort, webhookPort] = [await freePort(), await freePort()];
  const config = writeConfig(
    options.dir,
    tag,
    `${syncOnStart ? QUIET_DAEMON_TOML.replace('on_startup = false', 'on_startup = true') : QUIET_DAEMON_TOML}\n[operator]\nrate_per_second = 100000\n[outbox]\nconcurrency = 8\ndispatcher_thread = ${dispatcherThread}\n[database]\nsynchronous = "${synchronous}"\n${RECONCILE_TOML}`,
  );
  const daemon = spawnNode(
    cli.args(['run', '--config', config], [LOOP_DELAY_PRELOAD]),
    daemonEnv({ db: path.join(options.dir, `${tag}.db`), operatorUrl: sim.url, apiPort, webhookPort }),
  );
  try {
    await waitForHealthz(daemon, apiPort);
    const measured = await pacedLoad(apiPort, seconds, tag);
    const waits = await commitWaits(apiPort);
    options.say(`${tag}: commit waits ${waits}`);
    await daemon.stop(10_000);
    const loopDelay = daemon.stderr().match(/BENCH_LOOP_DELAY (.*)/)?.[1];
    if (loopDelay) options.say(`${tag}: daemon event-loop delay ${loopDelay} ms`);
    return { ...measured, waits, ...(loopDelay ? { loopDelay } : {}) };
  } finally {
    await daemon.stop(10_000);
  }
}

function row(
  scenario: string,
  l: Latencies,
  baseline: Latencies,
  notes: string,
  target?: string,
): ScenarioResult {
  return {
    scenario,
    measure: 'p99 ms',
    value: l.p99,
    baseline: baseline.p99,
    ratio: l.p99 / baseline.p99,
    target: target ?? '(reported)',
    met: target ? l.p99 < 5 : true,
    notes: `${notes}; p50 ${l.p50.toFixed(2)} ms (bare ${baseline.p50.toFixed(2)}), max ${l.max.toFixed(1)} ms${l.resets ? `; ${l.resets} resent after a reset` : ''}${l.loopDelay ? `; daemon loop delay ${l.loopDelay} ms` : ''}${l.waits ? `; commit waits: ${l.waits}` : ''}${l.p99All === undefined ? '' : `; p99 ${l.p99All.toFixed(1)} ms with the first second (the daemon's threads starting)`}${l.p99BySecond ? `; p99 by second ${l.p99BySecond.join('/')}` : ''}`,
    extra: {
      ...l,
      p99BySecond: l.p99BySecond?.join('/') ?? '',
      baselineP50: baseline.p50,
      baselineMax: baseline.max,
    },
  };
}

/**
 * Open-loop paced POST /v1/operations at 500 req/s (distinct refs, keep-alive, client here) against:
 * a bare Hono handler that parses the body and answers 201 (the floor of client, loopback and
 * machine: the baseline); `vcu-sync run` with its dispatcher paused by 401s (the API and its durable
 * commits alone); and `vcu-sync run` while its dispatcher drains to a simulator child (the target).
 */
export async function enqueueLatencyScenario(options: BenchOptions): Promise<ScenarioResult[]> {
  const seconds = options.quick ? 2 : 10;
  // BENCH_SYNCHRONOUS=normal measures without the fsync per commit (not used by `npm run bench`).
  const synchronous = process.env.BENCH_SYNCHRONOUS === 'normal' ? 'normal' : 'full';
  // BENCH_DISPATCHER_THREAD=0 runs the dispatcher on the API's loop (outbox.dispatcher_thread = false).
  const dispatcherThread = process.env.BENCH_DISPATCHER_THREAD !== '0';

  options.say(`enqueue latency: bare Hono baseline, ${RATE}/s for ${seconds} s`);
  const bare = spawnNode(tsx('test/bench/children/bareHono.ts', [path.join(options.dir, 'bare-durable.db')]));
  let baseline: Latencies;
  let durable: Latencies | undefined;
  try {
    const [, port] = await bare.waitFor(/listening (\d+)/, 60_000);
    baseline = await pacedLoad(Number(port), seconds, 'bench-bare');
    if (ROWS.has('durable')) {
      options.say(
        `enqueue latency: bare Hono + durable SQLite insert (the disk's floor), ${RATE}/s for ${seconds} s`,
      );
      durable = await pacedLoad(Number(port), seconds, 'bench-durable', '/durable/v1/operations');
    }
  } finally {
    await bare.stop();
  }

  const how = `child \`vcu-sync run\`, synchronous=${synchronous}, dispatcher_thread=${dispatcherThread}${RECONCILE_OFF ? ', reconcile off' : ''}; baseline: bare Hono handler, same client`;
  const rows: ScenarioResult[] = [];
  if (durable)
    rows.push(
      row(
        `enqueue at ${RATE} req/s, bare handler + durable insert`,
        durable,
        baseline,
        'the floor of a 201 that means on disk: bare Hono, one INSERT with synchronous=FULL per request; baseline: bare Hono handler',
      ),
    );
  const sim = await startSimChild(['--policy', 'none']);
  try {
    if (ROWS.has('paused')) {
      options.say(`enqueue latency: vcu-sync run, dispatcher paused, ${RATE}/s for ${seconds} s`);
      await sim.admin('POST', '/_sim/faults', {
        kind: '401',
        count: 1_000_000,
        pathPrefix: '/integration/v1/notify',
      });
      const paused = await daemonLoad(options, sim, 'enqueue-paused', seconds, synchronous, dispatcherThread);
      await sim.admin('DELETE', '/_sim/faults');
      rows.push(row(`enqueue at ${RATE} req/s, dispatcher paused`, paused, baseline, how));
    }
    if (ROWS.has('draining')) {
      options.say(`enqueue latency: vcu-sync run, dispatcher draining, ${RATE}/s for ${seconds} s`);
      const draining = await daemonLoad(options, sim, 'enqueue', seconds, synchronous, dispatcherThread);
      rows.push(row(`enqueue at ${RATE} req/s, dispatcher draining`, draining, baseline, how, '< 5 ms'));
    }
  } finally {
    await sim.close();
  }
  if (ROWS.has('sync'))
    rows.push(await whileSyncing(options, seconds, synchronous, dispatcherThread, baseline, how));
  return rows;
}

/**
 * The same load while the daemon's start-up full sync writes pages of a registry large enough to
 * outlast the load (and its dispatcher drains what the load queues).
 */
async function whileSyncing(
  options: BenchOptions,
  seconds: number,
  synchronous: string,
  dispatcherThread: boolean,
  baseline: Latencies,
  how: string,
): Promise<ScenarioResult> {
  const units = options.quick ? 20_000 : 600_000;
  const registry = await startRegistrySim({ projects: 2_000, issuances: 20_000, units }, 1_000);
  try {
    options.say(
      `enqueue latency: vcu-sync run during a full sync of ${units} units, ${RATE}/s for ${seconds} s`,
    );
    const syncing = await daemonLoad(
      options,
      registry,
      'enqueue-sync',
      seconds,
      synchronous,
      dispatcherThread,
      true,
    );
    return row(
      `enqueue at ${RATE} req/s, full sync writing`,
      syncing,
      baseline,
      `${how}; start-up full sync of ${units} units running`,
      '< 5 ms',
    );
  } finally {
    await registry.close();
  }
}
