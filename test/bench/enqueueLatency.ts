import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { freePort } from '../helpers/net.js';
import { tokenization } from '../outbox/fixtures.js';
import { BENCH_API_TOKEN, daemonEnv, QUIET_DAEMON_TOML, writeConfig } from './lib/benchConfig.js';
import { cliRunner } from './lib/build.js';
import { spawnNode, waitForHealthz } from './lib/proc.js';
import type { BenchOptions, ScenarioResult } from './lib/result.js';
import { startSimChild } from './lib/simulator.js';
import { quantile } from './lib/timing.js';

const RATE = 500;

/** One POST on a keep-alive agent; resolves with status and client-side milliseconds. */
function post(agent: http.Agent, port: number, body: string): Promise<{ status: number; ms: number }> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/operations',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          authorization: `Bearer ${BENCH_API_TOKEN}`,
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - start }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Open-loop paced POST /v1/operations at 500 req/s with distinct refs against `vcu-sync run` in a
 * child process (its dispatcher draining to a simulator child meanwhile); p50/p99 client-side.
 */
export async function enqueueLatencyScenario(options: BenchOptions): Promise<ScenarioResult[]> {
  const seconds = options.quick ? 2 : 10;
  const total = RATE * seconds;
  const cli = await cliRunner(options.quick, options.say);
  // Knobs for finding where the latency goes (not used by `npm run bench`):
  // BENCH_ENQUEUE_DISPATCHER=idle has /notify answer 401 (queued faults), so the dispatcher pauses
  // and the API runs alone;
  // BENCH_SYNCHRONOUS=normal measures without the fsync per commit.
  const idle = process.env.BENCH_ENQUEUE_DISPATCHER === 'idle';
  const synchronous = process.env.BENCH_SYNCHRONOUS === 'normal' ? 'normal' : 'full';
  const sim = await startSimChild(['--policy', 'none']);
  if (idle)
    await sim.admin('POST', '/_sim/faults', {
      kind: '401',
      count: 1_000_000,
      pathPrefix: '/integration/v1/notify',
    });
  const [apiPort, webhookPort] = [await freePort(), await freePort()];
  const config = writeConfig(
    options.dir,
    'enqueue',
    `${QUIET_DAEMON_TOML}\n[operator]\nrate_per_second = 100000\n[outbox]\nconcurrency = 8\n[database]\nsynchronous = "${synchronous}"\n`,
  );
  const db = path.join(options.dir, 'enqueue.db');
  const daemon = spawnNode(
    cli.args(['run', '--config', config]),
    daemonEnv({ db, operatorUrl: sim.url, apiPort, webhookPort }),
  );
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  try {
    await waitForHealthz(daemon, apiPort);
    // Warm-up: the first requests pay for JIT and statement preparation.
    for (let i = 0; i < 50; i++) await post(agent, apiPort, JSON.stringify(tokenization(`bench-warm-${i}`)));

    options.say(`enqueue latency: ${total} requests at ${RATE}/s (${cli.kind} daemon)`);
    const bodies = Array.from({ length: total }, (_, i) =>
      JSON.stringify(tokenization(`bench-enqueue-${i}`, { unitId: 300_000 + i, issuanceId: 400_000 + i })),
    );
    const latencies: number[] = [];
    const statuses = new Map<number, number>();
    const pending: Promise<void>[] = [];
    const start = performance.now();
    for (let i = 0; i < total; i++) {
      const due = start + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      pending.push(
        post(agent, apiPort, bodies[i]!).then(({ status, ms }) => {
          latencies.push(ms);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
        }),
      );
    }
    await Promise.all(pending);
    const achieved = total / ((performance.now() - start) / 1000);
    if ((statuses.get(201) ?? 0) !== total) {
      throw new Error(`expected ${total} x 201, got ${JSON.stringify(Object.fromEntries(statuses))}`);
    }
    const p50 = quantile(latencies, 0.5);
    const p99 = quantile(latencies, 0.99);
    const dispatcher = idle ? 'dispatcher paused by 401s' : 'dispatcher draining to a simulator child';
    const how = `child \`vcu-sync run\` (${cli.kind}, ${dispatcher}), client here; open loop, keep-alive; synchronous=${synchronous}`;
    return [
      {
        scenario: `enqueue at ${RATE} req/s, p50`,
        measure: 'ms',
        value: p50,
        baseline: null,
        ratio: null,
        target: '(reported)',
        met: true,
        notes: how,
        extra: { achievedRate: achieved, requests: total },
      },
      {
        scenario: `enqueue at ${RATE} req/s, p99`,
        measure: 'ms',
        value: p99,
        baseline: null,
        ratio: null,
        target: '< 5 ms',
        met: p99 < 5,
        notes: how,
        extra: { max: Math.max(...latencies), achievedRate: achieved },
      },
    ];
  } finally {
    agent.destroy();
    await daemon.stop(10_000);
    await sim.close();
  }
}
