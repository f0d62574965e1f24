import { execFileSync } from 'node:child_process';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { freePort } from '../helpers/net.js';
import { tokenization } from '../outbox/fixtures.js';
import { daemonEnv, QUIET_DAEMON_TOML, writeConfig } from './lib/benchConfig.js';
import { cliRunner } from './lib/build.js';
import {
  cpuSeconds,
  LongPoller,
  resentOnReset,
  rssMb,
  SseReader,
  stalledReader,
  timedRequest,
} from './lib/feedClients.js';
import { spawnNode, waitForHealthz } from './lib/proc.js';
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

interface Phase {
  enqueue: number[];
  healthz: number[];
  peakRss: number;
  resets: { count: number };
  /** CPU seconds the daemon and this process (the clients) used during the phase, and its length. */
  cpu: { daemon: number; clients: number; seconds: number };
}

/** Enqueues `count` at RATE per second while timing /healthz every 50 ms and sampling RSS. */
async function loadPhase(port: number, pid: number, count: number, tag: string): Promise<Phase> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const probe = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const phase: Phase = {
    enqueue: [],
    healthz: [],
    peakRss: await rssMb(pid),
    resets: { count: 0 },
    cpu: { daemon: 0, clients: 0, seconds: 0 },
  };
  const daemonCpu0 = await cpuSeconds(pid);
  const clientsCpu0 = process.cpuUsage();
  const t0 = performance.now();
  let running = true;
  const probing = (async () => {
    while (running) {
      const h = await resentOnReset(() => timedRequest(probe, port, 'GET', '/healthz'), phase.resets);
      if (h.status >= 500) throw new Error(`/healthz answered ${h.status}`);
      phase.healthz.push(h.ms);
      phase.peakRss = Math.max(phase.peakRss, await rssMb(pid));
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  // Awaited in `finally`; a failure meanwhile must not be an unhandled rejection.
  probing.catch(() => {});
  try {
    const start = performance.now();
    const sends: Promise<void>[] = [];
    for (let i = 0; i < count; i++) {
      const due = start + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const body = JSON.stringify(tokenization(`feedload-${tag}-${i}`, { marketplaceId: 'mkt-bench' }));
      const sent = resentOnReset(
        () => timedRequest(agent, port, 'POST', '/v1/operations', body),
        phase.resets,
      );
      sends.push(
        sent.then((a) => {
          if (a.status !== 201) throw new Error(`enqueue answered ${a.status}: ${a.body.slice(0, 200)}`);
          phase.enqueue.push(a.ms);
        }),
      );
      // Settled by Promise.all below; a failure meanwhile must not be an unhandled rejection.
      sends.at(-1)!.catch(() => {});
    }
    await Promise.all(sends);
  } finally {
    running = false;
    await probing.catch((err: unknown) => {
      throw new Error(`/healthz probe failed: ${(err as Error).message}`);
    });
    agent.destroy();
    probe.destroy();
  }
  const used = process.cpuUsage(clientsCpu0);
  phase.cpu = {
    daemon: (await cpuSeconds(pid)) - daemonCpu0,
    clients: (used.user + used.system) / 1e6,
    seconds: (performance.now() - t0) / 1000,
  };
  return phase;
}

/** Raises nothing itself: says how many descriptors this process may open (the clients need ~1,700). */
function openFileLimit(): number {
  return Number(execFileSync('sh', ['-c', 'ulimit -n']).toString().trim());
}

const fmt = (v: number) => v.toFixed(1);

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
  const daemon = spawnNode(
    cli.args(['run', '--config', config]),
    daemonEnv({ db: path.join(options.dir, 'feedload.db'), operatorUrl: sim.url, apiPort, webhookPort }),
  );
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
    const quiet = await loadPhase(apiPort, pid, enqueues, 'quiet');
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
    const loaded = await loadPhase(apiPort, pid, enqueues, 'loaded');
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
        notes: `${enqueues} enqueues each (${loaded.resets.count + quiet.resets.count} resent after a keep-alive reset): with readers p50 ${fmt(quantile(loaded.enqueue, 0.5))} ms, max ${fmt(Math.max(...loaded.enqueue))} ms; without p50 ${fmt(quantile(quiet.enqueue, 0.5))} ms; CPU s used over the phase's ${fmt(loaded.cpu.seconds)} s: daemon ${fmt(loaded.cpu.daemon)}, clients ${fmt(loaded.cpu.clients)} (without readers: ${fmt(quiet.cpu.daemon)} / ${fmt(quiet.cpu.clients)} over ${fmt(quiet.cpu.seconds)} s)`,
        extra: { p99: enqueueP99, quietP99 },
      },
      {
        scenario: "/healthz with the feed's readers",
        measure: 'p99 ms',
        value: healthP99,
        baseline: quantile(quiet.healthz, 0.99),
        ratio: null,
        target: '< 50 ms',
        met: healthP99 < 50,
        notes: `${loaded.healthz.length} probes every 50 ms while enqueueing; max ${fmt(Math.max(...loaded.healthz))} ms`,
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
