import { statSync } from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import { Webhook } from 'standardwebhooks';
import { freePort } from '../helpers/net.js';
import { BENCH_WEBHOOK_SECRET, daemonEnv, QUIET_DAEMON_TOML, writeConfig } from './lib/benchConfig.js';
import { cliRunner } from './lib/build.js';
import { cpuSeconds } from './lib/feedClients.js';
import { spawnNode, tsx, waitForHealthz } from './lib/proc.js';
import { type BenchOptions, ratioOf, type ScenarioResult } from './lib/result.js';
import { alternateRounds, roundsFor, summarizeRates } from './lib/rounds.js';
import { median } from './lib/timing.js';

const CONNECTIONS = 16;
/** Seconds of untimed load each server takes before its timed one. */
const WARM_UP_SECONDS = 2;

/** What one load gave: requests per second, answers, and the server's CPU per answered request. */
interface Load {
  rps: number;
  ok: number;
  non2xx: number;
  /** CPU (user + system, all threads) of the server process per 2xx, microseconds. */
  cpuUs: number;
}

/**
 * {@link load} with the server's CPU counted around it: unlike req/s, CPU per request hardly moves
 * when other processes load the machine, so it compares runs taken at different times.
 */
async function measuredLoad(url: string, seconds: number, prefix: string, serverPid: number): Promise<Load> {
  const cpu0 = await cpuSeconds(serverPid);
  const result = await load(url, seconds, prefix);
  const cpu = (await cpuSeconds(serverPid)) - cpu0;
  return { ...result, cpuUs: result.ok > 0 ? (cpu * 1e6) / result.ok : Number.NaN };
}

/** autocannon against `url` with a fresh Standard-Webhooks signature and webhook-id per request. */
async function load(
  url: string,
  seconds: number,
  prefix: string,
): Promise<{ rps: number; ok: number; non2xx: number }> {
  const signer = new Webhook(BENCH_WEBHOOK_SECRET);
  let n = 0;
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        setupRequest: (request) => {
          const id = `msg_${prefix}_${n}`;
          const body = JSON.stringify({
            type: 'transaction.approved',
            data: { marketplaceTransactionRef: `bench-hook-${prefix}-${n}`, status: 'approved' },
          });
          n++;
          const now = new Date();
          return {
            ...request,
            body,
            headers: {
              'content-type': 'application/json',
              'webhook-id': id,
              'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
              'webhook-signature': signer.sign(id, now, body),
            },
          };
        },
      },
    ],
  });
  return { rps: result.requests.average, ok: result['2xx'], non2xx: result.non2xx + result.errors };
}

/** The bare Hono child's two loads: without storing (the baseline) and with a durable insert (the floor). */
async function bareLoads(dir: string, round: number, seconds: number, say: (line: string) => void) {
  say(`webhooks: bare Hono baseline, round ${round} (${seconds} s, ${CONNECTIONS} connections)`);
  const bare = spawnNode(tsx('test/bench/children/bareHono.ts', [path.join(dir, `bare-hooks-${round}.db`)]));
  try {
    const [, port] = await bare.waitFor(/listening (\d+)/, 60_000);
    const pid = bare.proc.pid!;
    const url = `http://127.0.0.1:${port}`;
    await load(`${url}/webhooks/operator`, WARM_UP_SECONDS, `bare-warm-${round}`);
    const base = await measuredLoad(`${url}/webhooks/operator`, seconds, `bare-${round}`, pid);
    say(`webhooks: bare Hono + durable insert, the disk's floor (${seconds} s)`);
    const durable = await measuredLoad(`${url}/durable/webhooks/operator`, seconds, `durable-${round}`, pid);
    return { base, durable };
  } finally {
    await bare.stop();
  }
}

/** The listener of a child `vcu-sync run` on a fresh database; every 2xx must be stored. */
async function listenerLoad(
  dir: string,
  cli: Awaited<ReturnType<typeof cliRunner>>,
  round: number,
  seconds: number,
  say: (line: string) => void,
): Promise<Load & { stored: number }> {
  const [apiPort, webhookPort] = [await freePort(), await freePort()];
  const db = path.join(dir, `webhooks-${round}.db`);
  const config = writeConfig(dir, `webhooks-${round}`, QUIET_DAEMON_TOML);
  const daemon = spawnNode(
    cli.args(['run', '--config', config]),
    daemonEnv({ db, operatorUrl: 'http://127.0.0.1:9', apiPort, webhookPort }),
  );
  let warm: { ok: number; non2xx: number };
  let measured: Load;
  try {
    await waitForHealthz(daemon, apiPort);
    say(`webhooks: vcu-sync listener (${cli.kind}), round ${round}`);
    const url = `http://127.0.0.1:${webhookPort}/webhooks/operator`;
    warm = await load(url, WARM_UP_SECONDS, `real-warm-${round}`);
    measured = await measuredLoad(url, seconds, `real-${round}`, daemon.proc.pid!);
    say(`webhooks: WAL ${(statSync(`${db}-wal`).size / 1048576).toFixed(1)} MiB after the load`);
  } finally {
    await daemon.stop(10_000);
  }
  if (measured.non2xx + warm.non2xx > 0)
    throw new Error(`${measured.non2xx + warm.non2xx} webhooks were not answered 2xx`);
  const sqlite = new Database(db, { readonly: true });
  const stored = (sqlite.prepare('SELECT count(*) AS n FROM webhook_events').get() as { n: number }).n;
  sqlite.close();
  // autocannon stops counting at the deadline: requests still in flight are stored but not counted.
  const answered = warm.ok + measured.ok;
  if (stored < answered || stored > answered + 2 * CONNECTIONS) {
    throw new Error(`${answered} webhooks answered 2xx but ${stored} stored`);
  }
  return { ...measured, stored };
}

/**
 * Verified webhooks/s: autocannon (in this process) against the real webhook listener of a child
 * `vcu-sync run`, versus a bare Hono handler in a child, in rounds (./lib/rounds.ts): each server
 * takes an untimed load first, as the harness's autocannon warmed up under whichever ran first.
 */
export async function webhooksScenario(options: BenchOptions): Promise<ScenarioResult[]> {
  const seconds = options.quick ? 2 : 5;
  const rounds = roundsFor(options.quick);
  const cli = await cliRunner(options.quick, options.say);
  const done = await alternateRounds(
    rounds,
    (round) => bareLoads(options.dir, round, seconds, options.say),
    (round) => listenerLoad(options.dir, cli, round, seconds, options.say),
  );
  const rates = summarizeRates(done.map((d) => ({ value: d.ours.rps, baseline: d.baseline.base.rps })));
  const floors = summarizeRates(done.map((d) => ({ value: d.ours.rps, baseline: d.baseline.durable.rps })));
  const mid = (pick: (d: (typeof done)[number]) => number) => median(done.map(pick));
  const measured = { rps: rates.value, cpuUs: mid((d) => d.ours.cpuUs) };
  const base = { rps: rates.baseline, cpuUs: mid((d) => d.baseline.base.cpuUs) };
  const durable = { rps: floors.baseline, cpuUs: mid((d) => d.baseline.durable.cpuUs) };
  const stored = done.reduce((n, d) => n + d.ours.stored, 0);
  const ratio = rates.ratio;
  return [
    {
      scenario: 'verified webhooks',
      measure: 'req/s',
      value: measured.rps,
      baseline: base.rps,
      ratio,
      target: '>= 0.8 x baseline',
      met: ratio >= 0.8,
      notes: `median of ${rounds} round(s), the baseline first in odd rounds (${rates.spread}); autocannon in the harness, ${CONNECTIONS} connections, ${seconds} s after ${WARM_UP_SECONDS} s untimed on each server; listener in child \`vcu-sync run\` (${cli.kind}), synchronous=full, a fresh database each round; bare Hono child; ${stored} events stored >= 2xx count`,
      extra: {
        stored,
        durableFloor: durable.rps,
        cpuUsPerRequest: measured.cpuUs,
        bareCpuUsPerRequest: base.cpuUs,
        durableCpuUsPerRequest: durable.cpuUs,
      },
    },
    {
      scenario: 'verified webhooks, server CPU per request',
      measure: 'us/req',
      value: measured.cpuUs,
      baseline: base.cpuUs,
      // Inverted so that, like the rows above, above 1 is better: bare Hono's cost over ours.
      ratio: ratioOf(base.cpuUs, measured.cpuUs)!,
      target: '(reported)',
      met: true,
      notes: `CPU (user + system, every thread) of each server process over its load / its 2xx count; ratio = bare / vcu-sync, the req/s ratio a CPU-bound host would give; medians of the rounds; bare + durable insert ${durable.cpuUs.toFixed(0)} us`,
    },
    {
      scenario: 'verified webhooks against a bare durable insert',
      measure: 'req/s',
      value: measured.rps,
      baseline: durable.rps,
      ratio: floors.ratio,
      target: '(reported)',
      met: true,
      notes: `baseline: the same bare Hono handler storing each body with a group-committed INSERT, synchronous=full (the floor of a 2xx that means stored, on this disk), median of the rounds (${floors.spread}); bare without storing ${Math.round(base.rps)} req/s`,
    },
  ];
}
