/**
 * Issue 25, item 11: `operator.rate_per_second` is one budget for the whole daemon. A real daemon
 * (`vcu-sync run`, the dispatcher and the syncs each in their own thread, the defaults) drains a
 * queue while its start-up sync pages through every list, and the simulator counts what reaches it
 * by its own receipt times. Before, each thread had a limiter of its own: at 20 req/s the operator
 * saw 40 a second for as long as both ran.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { tempDir } from '../helpers/context.js';
import { apiCaller } from '../helpers/http.js';
import { tokenization } from '../outbox/fixtures.js';
import { daemonEnv, daemonToml, spawnCli, until, untilEvent, writeToml } from './child.js';

const RATE = 20;
/** The limiter's bucket holds one second of requests: a daemon that was idle may send that at once. */
const BURST = RATE;
/**
 * Requests counted in a window beyond what the bucket allows: receipt times are not send times (a
 * request may wait in the socket while the test's loop is busy, and arrive with later ones). Seen:
 * up to 2 on a loaded machine; two limiters of their own exceed the bound by 50 and more.
 */
const JITTER = 6;
const OPERATIONS = 100;
const NOTIFY = '/integration/v1/notify';

let sim: Simulator;
let dir: string;
let cleanup: () => void;
beforeAll(async () => {
  // Enough pages that the start-up sync outlasts a few seconds at the rate, as does the queue.
  sim = await startSimulator({ projects: 60, issuances: 60, units: 60, webhook: { policy: 'none' } });
  ({ dir, cleanup } = tempDir('vcu-sync-rate-budget-'));
});
afterAll(async () => {
  await sim.close();
  cleanup();
});

/**
 * The most requests in any window [t_i, t_j] beyond what a bucket of `rate`/s alone allows there
 * (`rate` × its length), over receipt times in order: a token bucket of size B keeps this ≤ B.
 */
function excessOverRate(times: readonly number[], rate: number): number {
  let worst = 0;
  for (let i = 0; i < times.length; i++) {
    for (let j = i; j < times.length; j++) {
      const allowed = (rate * (times[j]! - times[i]!)) / 1000;
      worst = Math.max(worst, j - i + 1 - allowed);
    }
  }
  return worst;
}

/** Requests per calendar second of receipt, busiest first. */
function perSecond(times: readonly number[]): Array<[number, number]> {
  const counts = new Map<number, number>();
  for (const t of times) counts.set(Math.floor(t / 1000), (counts.get(Math.floor(t / 1000)) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]);
}

describe('one politeness budget for every thread of the daemon', () => {
  it(`a sync and a drain together stay within ${RATE} req/s at the operator (plus one bucket of ${BURST})`, async () => {
    const dbFile = path.join(dir, 'vcu.db');
    const toml = daemonToml({ onStartup: true, pageSize: 3 }).replace(
      'rate_per_second = 100000',
      `rate_per_second = ${RATE}`,
    );
    expect(toml).toContain(`rate_per_second = ${RATE}`);
    const env = daemonEnv(dir, sim.url, writeToml(dir, toml));
    const daemon = spawnCli(['run'], env);
    try {
      await untilEvent(daemon, 'daemon.ready');
      const listen = daemon.events().find((e) => e.event === 'api.listening')?.listen as string;
      const call = apiCaller(`http://${listen}`, env.VCU_SYNC_API_TOKEN!);
      // The queue fills once the start-up sync is paging (its thread may start after the
      // dispatcher's), so that the drain and the sync run together.
      await until('the start-up sync paging', () => sim.stats.arrivals().length >= 5);
      for (let i = 0; i < OPERATIONS; i++) {
        const res = await call('POST', '/v1/operations', tokenization(`budget-${i}`, { unitId: 1000 + i }));
        expect(res.status, res.text).toBe(201);
      }
      const reader = new Database(dbFile, { readonly: true, fileMustExist: true });
      try {
        const accepted = () =>
          (reader.prepare("SELECT count(*) AS n FROM outbox WHERE state = 'accepted'").get() as { n: number })
            .n;
        const runs = (status: string) =>
          (
            reader.prepare('SELECT count(*) AS n FROM sync_runs WHERE status = ?').get(status) as {
              n: number;
            }
          ).n;
        await until(
          () => `the queue drained and the start-up syncs done; output:\n${daemon.output().slice(-2000)}`,
          () => accepted() === OPERATIONS && runs('running') === 0 && runs('succeeded') >= 3,
          240_000,
        );
      } finally {
        reader.close();
      }
      daemon.child.kill('SIGTERM');
      expect(await daemon.exited, daemon.output().slice(-3000)).toBe(0);
    } finally {
      if (daemon.child.exitCode === null) daemon.child.kill('SIGKILL');
    }

    const arrivals = sim.stats.arrivals();
    const notifies = arrivals.filter((a) => a.path === NOTIFY).map((a) => a.at);
    const reads = arrivals.filter((a) => a.path !== NOTIFY).map((a) => a.at);
    expect(notifies.length).toBeGreaterThanOrEqual(OPERATIONS);
    // The two ran together: within the time both were sending, each sent a good share of its requests.
    const from = Math.max(notifies[0]!, reads[0]!);
    const to = Math.min(notifies.at(-1)!, reads.at(-1)!);
    const within = (ts: number[]) => ts.filter((t) => t >= from && t <= to).length;
    expect(within(notifies), 'notifies while the sync ran').toBeGreaterThanOrEqual(RATE);
    expect(within(reads), 'sync pages while the drain ran').toBeGreaterThanOrEqual(RATE);

    const times = arrivals.map((a) => a.at);
    const busiest = perSecond(times).slice(0, 3);
    const spanS = (times.at(-1)! - times[0]!) / 1000;
    const summary = `${times.length} requests in ${spanS.toFixed(1)} s, busiest seconds ${JSON.stringify(busiest.map(([, n]) => n))}`;
    // Any window holds at most the rate times its length plus one bucket: over the whole run that
    // is the rate on average (two limiters of their own would send twice as many in the same time).
    expect(excessOverRate(times, RATE), summary).toBeLessThanOrEqual(BURST + JITTER);
    // So no calendar second holds more than the rate plus the bucket.
    expect(busiest[0]![1], summary).toBeLessThanOrEqual(RATE + BURST + JITTER);
  }, 300_000);
});

describe('excessOverRate', () => {
  it('is the bucket a paced run started with, and grows with requests the rate has no room for', () => {
    const paced = Array.from({ length: 40 }, (_, i) => (i < 20 ? 0 : (i - 19) * 50));
    expect(excessOverRate(paced, 20)).toBe(20);
    const twice = Array.from({ length: 100 }, (_, i) => i * 25);
    expect(excessOverRate(twice, 20)).toBeGreaterThan(45);
  });
});
