import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { tokenization } from '../../outbox/fixtures.js';
import { timedRequest } from './feedClients.js';
import { quantile } from './timing.js';

/**
 * The enqueue bench's client (./enqueueLatency.ts): open-loop paced POSTs, timed one by one. It runs
 * in a child process of its own (children/pacedLoad.ts) with a young generation large enough that it
 * does not collect during the load: in the bench's own process, whose heap the earlier scenarios
 * filled, its garbage collections (a scavenge and a mark-compact, 5-10 ms together) were timed as
 * the server's latency, in every row alike.
 */

/** Requests a second. */
export const RATE = 500;

export interface Latencies {
  p50: number;
  p99: number;
  max: number;
  achievedRate: number;
  /** p99 of every request, the first second's included, ms (p50 and p99 leave that second out). */
  p99All?: number;
  /** p99 of the requests sent in each second of the load, ms. */
  p99BySecond?: number[];
  /** Requests sent again after a connection reset. */
  resets: number;
  /** The daemon's main-thread event-loop delay over its life (perf_hooks), when measured. */
  loopDelay?: string;
  /** Where the daemon's group commits waited (lock, fsync), from its metrics (./lib/commitWaits.ts). */
  waits?: string;
}

/** What the child is asked: the port, how long, the refs' tag and the path. */
export interface PacedLoadJob {
  port: number;
  seconds: number;
  tag: string;
  path: string;
}

/** Open-loop paced POSTs of distinct notifications at RATE/s; every answer must be 201. */
export async function pacedLoad({ port, seconds, tag, path }: PacedLoadJob): Promise<Latencies> {
  const total = RATE * seconds;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  try {
    // Warm-up: the first requests pay for JIT and statement preparation.
    for (let i = 0; i < 50; i++)
      await timedRequest(agent, port, 'POST', path, JSON.stringify(tokenization(`${tag}-warm-${i}`)));
    const bodies = Array.from({ length: total }, (_, i) =>
      JSON.stringify(tokenization(`${tag}-${i}`, { unitId: 300_000 + i, issuanceId: 400_000 + i })),
    );
    /** Each latency by the second of the load it was sent in. */
    const bySecond: number[][] = Array.from({ length: seconds }, () => []);
    const statuses = new Map<number, number>();
    let resets = 0;
    const pending: Promise<void>[] = [];
    const start = performance.now();
    for (let i = 0; i < total; i++) {
      const wait = start + (i * 1000) / RATE - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      const t0 = performance.now();
      pending.push(
        timedRequest(agent, port, 'POST', path, bodies[i]!)
          // A reset keep-alive socket (the server closed it as the request left) is the client's
          // race, not an answer: sent again once on a new socket, counted, timed from the first try.
          .catch(() => {
            resets++;
            return timedRequest(agent, port, 'POST', path, bodies[i]!);
          })
          .then(
            ({ status }) => {
              const ms = performance.now() - t0;
              bySecond[Math.min(seconds - 1, Math.floor(i / RATE))]!.push(ms);
              statuses.set(status, (statuses.get(status) ?? 0) + 1);
            },
            () => {
              statuses.set(0, (statuses.get(0) ?? 0) + 1);
            },
          ),
      );
    }
    await Promise.all(pending);
    const achievedRate = total / ((performance.now() - start) / 1000);
    if ((statuses.get(201) ?? 0) !== total) {
      throw new Error(`${tag}: expected ${total} x 201, got ${JSON.stringify(Object.fromEntries(statuses))}`);
    }
    // The first second is reported apart: a daemon answers once its listeners are up, while its
    // worker threads still load their modules (measured: p99 60-70 ms in that second, 4-5 ms in each
    // later one with the dispatcher paused). The target is the steady rate after it.
    const steady = bySecond.slice(1).flat();
    return {
      p50: quantile(steady, 0.5),
      p99: quantile(steady, 0.99),
      p99All: quantile(bySecond.flat(), 0.99),
      p99BySecond: bySecond.map((l) => Number(quantile(l, 0.99).toFixed(1))),
      max: Math.max(...bySecond.flat()),
      achievedRate,
      resets,
    };
  } finally {
    agent.destroy();
  }
}
