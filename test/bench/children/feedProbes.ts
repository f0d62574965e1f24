/**
 * The feed bench's probes in their own process: enqueues at a fixed rate, /healthz every 50 ms and
 * the daemon's RSS, printed as one `probes JSON` line. Apart from the 1,600 load clients (the bench
 * process), so a probe's latency is the daemon's, not the latency of a client loop they saturate.
 * Args: PORT PID COUNT TAG RATE.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { tokenization } from '../../outbox/fixtures.js';
import { cpuSeconds, resentOnReset, rssMb, timedRequest } from '../lib/feedClients.js';

const [port, pid, count, rate] = [2, 3, 4, 6].map((i) => Number(process.argv[i])) as [
  number,
  number,
  number,
  number,
];
const tag = process.argv[5] ?? 'probe';

/** What a phase measured (ms lists, MB, CPU seconds); the bench reads it from stdout. */
export interface ProbePhase {
  enqueue: number[];
  healthz: number[];
  peakRss: number;
  resets: number;
  /** CPU seconds the daemon used over the phase, the probes' own, and the phase's length. */
  cpu: { daemon: number; probes: number; seconds: number };
  /** Wall-clock bounds of the phase (ms since the epoch): to pick the daemon's loop-delay ticks. */
  from: number;
  to: number;
}

async function loadPhase(): Promise<ProbePhase> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const probe = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const resets = { count: 0 };
  const phase: ProbePhase = {
    enqueue: [],
    healthz: [],
    peakRss: await rssMb(pid),
    resets: 0,
    cpu: { daemon: 0, probes: 0, seconds: 0 },
    from: Date.now(),
    to: 0,
  };
  const daemonCpu0 = await cpuSeconds(pid);
  const ownCpu0 = process.cpuUsage();
  const t0 = performance.now();
  let running = true;
  const probing = (async () => {
    while (running) {
      const h = await resentOnReset(() => timedRequest(probe, port, 'GET', '/healthz'), resets);
      if (h.status >= 500) throw new Error(`/healthz answered ${h.status}`);
      phase.healthz.push(h.ms);
      phase.peakRss = Math.max(phase.peakRss, await rssMb(pid));
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  // Awaited in `finally`; a failure meanwhile must not be an unhandled rejection.
  probing.catch(() => {});
  try {
    const sends: Promise<void>[] = [];
    for (let i = 0; i < count; i++) {
      const wait = t0 + (i * 1000) / rate - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const body = JSON.stringify(tokenization(`feedload-${tag}-${i}`, { marketplaceId: 'mkt-bench' }));
      const sent = resentOnReset(() => timedRequest(agent, port, 'POST', '/v1/operations', body), resets);
      const checked = sent.then((a) => {
        if (a.status !== 201) throw new Error(`enqueue answered ${a.status}: ${a.body.slice(0, 200)}`);
        phase.enqueue.push(a.ms);
      });
      // Settled by Promise.all below; a failure meanwhile must not be an unhandled rejection.
      checked.catch(() => {});
      sends.push(checked);
    }
    await Promise.all(sends);
  } finally {
    running = false;
    await probing;
    agent.destroy();
    probe.destroy();
  }
  const own = process.cpuUsage(ownCpu0);
  phase.resets = resets.count;
  phase.to = Date.now();
  phase.cpu = {
    daemon: (await cpuSeconds(pid)) - daemonCpu0,
    probes: (own.user + own.system) / 1e6,
    seconds: (performance.now() - t0) / 1000,
  };
  return phase;
}

process.stdout.write(`probes ${JSON.stringify(await loadPhase())}\n`);
