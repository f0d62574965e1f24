import { execFileSync } from 'node:child_process';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { freePort } from '../helpers/net.js';
import { tokenization } from '../outbox/fixtures.js';
import type { ProbePhase } from './children/feedProbes.js';
import { daemonEnv, QUIET_DAEMON_TOML, writeConfig } from './lib/benchConfig.js';
import { cliRunner } from './lib/build.js';
import {
  LongPoller,
  resentOnReset,
  rssMb,
  SseReader,
  stalledReader,
  timedRequest,
} from './lib/feedClients.js';
import { type Child, spawnNode, tsx, waitForHealthz } from './lib/proc.js';
import type { BenchOptions, ScenarioResult } from './lib/result.js';
import { startSimChild } from './lib/simulator.js';
import { quantile, until } from './lib/timing.js';

/**
 * Issue 25 item 7: the change feed's memory under many readers. `vcu-sync run` in a child (the
 * dispatcher held by 401s, so each enqueue is one change); a backlog of changes; then 1,000 SSE
 * readers and 100 stalled ones (raw sockets that never read) from the start, and 500 long-poll
 * loops, while operations are enqueued at a fixed rate. Measured: the daemon's RSS idle, at its
 * peak, and after the clients close; enqueue p99 with and without the readers; /healthz p99.
 */

const RATE = 5;
/** The daemon prints its loop delay every this many ms (lib/loopDelay.mjs). */
const LOOP_TICK_MS = 1_000;
const LOOP_DELAY_PRELOAD = path.join(import.meta.dirname, 'lib/loopDelay.mjs');

interface Phase extends ProbePhase {
  /** CPU seconds the load clients (this process) used over the phase. */
  clientsCpu: number;
  /** The daemon's main-thread event-loop delay over the phase: worst per-second p99, and max (ms). */
  loop: { p99: number; max: number } | undefined;
}

/** The daemon's loop-delay ticks (lib/loopDelay.mjs) within [from, to]. */
function loopDelayOver(stderr: string, from: number, to: number): Phase['loop'] {
  const ticks = [...stderr.matchAll(/BENCH_LOOP_DELAY_TICK (\d+) p99=([\d.]+) max=([\d.]+)/g)]
    .map((m) => ({ at: Number(m[1]), p99: Number(m[2]), max: Number(m[3]) }))
    .filter((t) => t.at > from && t.at <= to + LOOP_TICK_MS);
  if (ticks.length === 0) return undefined;
  return { p99: Math.max(...ticks.map((t) => t.p99)), max: Math.max(...ticks.map((t) => t.max)) };
}

/**
 * Enqueues `count` at RATE per second while timing /healthz every 50 ms and sampling RSS, from a
 * child process (children/feedProbes.ts): the load clients here saturate this process's loop.
 */
async function loadPhase(daemon: Child, port: number, count: number, tag: string): Promise<Phase> {
  const pid = daemon.proc.pid!;
  const clientsCpu0 = process.cpuUsage();
  const probes = spawnNode(
    tsx('test/bench/children/feedProbes.ts', [String(port), String(pid), String(count), tag, String(RATE)]),
  );
  const code = await probes.exited;
  const line = probes.lines.find((l) => l.startsWith('probes '));
  if (code !== 0 || line === undefined)
    throw new Error(`the probes failed (${code}): ${probes.stderr().slice(-2000)}`);
  const phase = JSON.parse(line.slice('probes '.length)) as ProbePhase;
  const used = process.cpuUsage(clientsCpu0);
  return {
    ...phase,
    clientsCpu: (used.user + used.system) / 1e6,
    loop: loopDelayOver(daemon.stderr(), phase.from, phase.to),
  };
}

/** Raises nothing itself: says how many descriptors this process may open (the clients need ~1,700). */
function openFileLimit(): number {
  return Number(execFileSync('sh', ['-c', 'ulimit -n']).toString().trim());
}

const fmt = (v: number) => v.toFixed(1);
const loopText = (l: Phase['loop']) => (l ? `${fmt(l.p99)} / ${fmt(l.max)}` : 'n/a');

export async function feedLoadScenario(options: BenchOptions): Promise<ScenarioResult[]> {
  const sse = options.quick ? 50 : 1_000;
  const polls = options.quick ? 25 : 500;
  const stalled = options.quick ? 10 : 100;
  const backlog = options.quick ? 100 : 2_000;
  const enqueues = options.quick ? 20 : 300;
  const limit = openFileLimit();
  if (limit < sse + polls + stalled + 200)
    throw new Error(`ulimit -n is ${limit}: raise it (the clients need ${sse + polls + stalled + 200})`);
  const sim = await startSimChild(['--policy', 'none']);
  const cli = await cliRunner(options.quick, options.say);
  const [apiPort, webhookPort] = [await freePort(), await freePort()];
  const config = writeConfig(options.dir, 'feedload', `${QUIET_DAEMON_TOML}\n`);
  await sim.admin('POST', '/_sim/faults', {
    kind: '401',
    count: 1_000_000,
    pathPrefix: '/integration/v1/notify',
  });
  const daemon = spawnNode(cli.args(['run', '--config', config], [LOOP_DELAY_PRELOAD]), {
    ...daemonEnv({ db: path.join(options.dir, 'feedload.db'), operatorUrl: sim.url, apiPort, webhookPort }),
    BENCH_LOOP_DELAY_TICK_MS: String(LOOP_TICK_MS),
  });
  const pid = daemon.proc.pid!;
  const readers: SseReader[] = [];
  const pollers: LongPoller[] = [];
  const sockets: net.Socket[] = [];
  const pollAgent = new http.Agent({ keepAlive: true, maxSockets: polls });
  try {
    await waitForHealthz(daemon, apiPort);
    options.say(`feed load: backlog of ${backlog} changes`);
    const fill = new http.Agent({ keepAlive: true, maxSockets: 8 });
    for (let i = 0; i < backlog; i += 8) {
      await Promise.all(
        Array.from({ length: Math.min(8, backlog - i) }, (_, k) =>
          resentOnReset(
            () =>
              timedRequest(
                fill,
                apiPort,
                'POST',
                '/v1/operations',
                JSON.stringify(tokenization(`feedload-backlog-${i + k}`, { marketplaceId: 'mkt-bench' })),
              ),
            { count: 0 },
          ),
        ),
      );
    }
    fill.destroy();
    options.say(`feed load: ${enqueues} enqueues at ${RATE}/s without readers`);
    const quiet = await loadPhase(daemon, apiPort, enqueues, 'quiet');
    const idle = await rssMb(pid);
    options.say(`feed load: ${sse} SSE readers, ${polls} long-polls, ${stalled} stalled readers`);
    for (let i = 0; i < stalled; i++) sockets.push(stalledReader(apiPort));
    for (let i = 0; i < sse; i++) {
      const r = new SseReader(apiPort);
      readers.push(r);
      r.open();
    }
    for (let i = 0; i < polls; i++) {
      const p = new LongPoller(pollAgent, apiPort);
      pollers.push(p);
      void p.run();
    }
    const head = () => backlog + enqueues;
    await until('every SSE reader at the head', () => readers.every((r) => r.last >= head()), 300_000, 100);
    await until('every long-poll at the head', () => pollers.every((p) => p.last >= head()), 300_000, 100);
    options.say(`feed load: ${enqueues} enqueues at ${RATE}/s with the readers`);
    const loaded = await loadPhase(daemon, apiPort, enqueues, 'loaded');
    const total = backlog + 2 * enqueues;
    await until(
      'every SSE reader at the new head',
      () => readers.every((r) => r.last >= total),
      300_000,
      100,
    );
    const reconnects = readers.reduce((n, r) => n + r.reconnects, 0);
    const refused = readers.reduce((n, r) => n + r.refused, 0) + pollers.reduce((n, p) => n + p.refused, 0);
    for (const r of readers) r.close();
    for (const p of pollers) p.stop();
    for (const s of sockets) s.destroy();
    pollAgent.destroy();
    // A bench may wait: the long-polls' own waits end and the daemon settles.
    let after = await rssMb(pid);
    for (let i = 0; i < (options.quick ? 2 : 20); i++) {
      await new Promise((r) => setTimeout(r, 500));
      after = Math.min(after, await rssMb(pid));
    }
    const enqueueP99 = quantile(loaded.enqueue, 0.99);
    const quietP99 = quantile(quiet.enqueue, 0.99);
    const healthP99 = quantile(loaded.healthz, 0.99);
    const peak = loaded.peakRss;
    const clients = `${sse} SSE + ${polls} long-polls + ${stalled} stalled`;
    return [
      {
        scenario: `feed readers (${clients}): daemon RSS`,
        measure: 'peak RSS MB',
        value: peak,
        baseline: idle,
        ratio: peak / idle,
        target: '< 300 MB, back near idle after',
        met: peak < 300 && after < idle * 1.25,
        notes: `RSS idle ${fmt(idle)} MB (after ${enqueues} enqueues, ${backlog} backlog), peak ${fmt(peak)} MB with the readers, ${fmt(after)} MB 10 s after they closed; SSE reconnects ${reconnects}, answers refused ${refused}`,
        extra: { idle, peak, after, reconnects, refused },
      },
      {
        scenario: `enqueue at ${RATE}/s with the feed's readers`,
        measure: 'p99 ms',
        value: enqueueP99,
        baseline: quietP99,
        ratio: enqueueP99 / quietP99,
        target: '<= 2x without readers',
        met: enqueueP99 <= 2 * quietP99,
        notes: `${enqueues} enqueues each (${loaded.resets + quiet.resets} resent after a keep-alive reset): with readers p50 ${fmt(quantile(loaded.enqueue, 0.5))} ms, max ${fmt(Math.max(...loaded.enqueue))} ms; without p50 ${fmt(quantile(quiet.enqueue, 0.5))} ms; CPU s used over the phase's ${fmt(loaded.cpu.seconds)} s: daemon ${fmt(loaded.cpu.daemon)}, clients ${fmt(loaded.clientsCpu)}, probes ${fmt(loaded.cpu.probes)} (without readers: ${fmt(quiet.cpu.daemon)} / ${fmt(quiet.clientsCpu)} / ${fmt(quiet.cpu.probes)} over ${fmt(quiet.cpu.seconds)} s); daemon loop delay (worst 1 s p99 / max) ${loopText(loaded.loop)} ms with readers, ${loopText(quiet.loop)} ms without`,
        extra: {
          p99: enqueueP99,
          quietP99,
          ...(loaded.loop ? { loopP99: loaded.loop.p99, loopMax: loaded.loop.max } : {}),
        },
      },
      {
        scenario: "/healthz with the feed's readers",
        measure: 'p99 ms',
        value: healthP99,
        baseline: quantile(quiet.healthz, 0.99),
        ratio: null,
        target: '< 50 ms',
        met: healthP99 < 50,
        notes: `${loaded.healthz.length} probes every 50 ms while enqueueing (from a process of their own, apart from the load clients); max ${fmt(Math.max(...loaded.healthz))} ms`,
        extra: { p99: healthP99 },
      },
    ];
  } finally {
    for (const r of readers) r.close();
    for (const p of pollers) p.stop();
    for (const s of sockets) s.destroy();
    pollAgent.destroy();
    await daemon.stop(10_000);
    await sim.close();
  }
}
