import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { bareStreamSync } from './lib/baselineSync.js';
import { writeConfig } from './lib/benchConfig.js';
import { cliRunner } from './lib/build.js';
import { describeMachine } from './lib/machine.js';
import { spawnNode } from './lib/proc.js';
import type { BenchOptions, ScenarioResult } from './lib/result.js';
import { alternateRounds, roundsFor, summarizeRates } from './lib/rounds.js';
import { startSimChild } from './lib/simulator.js';
import { median, timed } from './lib/timing.js';

/** Both sides use the production default, so the figure is what a deployment sees. */
const SYNCHRONOUS = 'full';
/** The page size asked for; the simulator ignores it and answers with the whole log. */
const PAGE_SIZE = 1000;
/**
 * Records per baseline transaction: what the daemon holds at most for pages read whole
 * (src/mirror/scan/heldWrites.ts HELD_RECORDS), so neither side wins on commit count alone.
 */
const BASELINE_PER_COMMIT = 10_000;

/** Prints the child's CPU time as it exits (the host is shared: CPU seconds are read beside wall ones). */
const CPU_PRELOAD = pathToFileURL(path.join(import.meta.dirname, 'lib/cpuTime.mjs')).href;

/** CPU seconds (user + system) this process spent in `work`. */
async function cpuSeconds(work: () => Promise<unknown>): Promise<number> {
  const before = process.cpuUsage();
  await work();
  const { user, system } = process.cpuUsage(before);
  return (user + system) / 1e6;
}

/** The config of the timed `vcu-sync sync units`: no client throttle, a timeout the body fits in. */
const TOML = `[operator]
rate_per_second = 100000
timeout_ms = 120000
[sync]
page_size = ${PAGE_SIZE}
[database]
synchronous = "${SYNCHRONOUS}"
[outbox]
lease_seconds = 300
`;

/** One timed run: seconds of wall and of CPU. */
interface Run {
  seconds: number;
  cpu: number;
}

/**
 * `vcu-sync sync units` as the installed command runs it (a child process, start-up included)
 * against an operator that serves the whole units log in one unpaginated body, versus a bare
 * stream-split + JSON.parse + prepared upsert loop into the same table (same migrations, same
 * indexes), in rounds (./lib/rounds.ts), each side on a fresh database every round.
 */
export async function unpaginatedScenario(options: BenchOptions): Promise<ScenarioResult[]> {
  const units = options.quick ? 20_000 : 300_000;
  const rounds = roundsFor(options.quick);
  const cli = await cliRunner(options.quick, options.say);
  const sim = await startSimChild(['--units', String(units), '--units-unpaginated', '--policy', 'none']);
  const ours = async (round: number): Promise<Run> => {
    const config = writeConfig(options.dir, `unpaginated-${round}`, TOML);
    options.say(`unpaginated units: vcu-sync sync units (${units} in one body, ${cli.kind}), round ${round}`);
    let cpu = 0;
    const { seconds } = await timed(async () => {
      const child = spawnNode(cli.args(['sync', 'units', '--config', config], [CPU_PRELOAD]), {
        VCU_SYNC_DB: path.join(options.dir, `unpaginated-${round}.db`),
        VCU_SYNC_OPERATOR_URL: sim.url,
        VCU_SYNC_API_KEY: 'sim-api-key',
        VCU_SYNC_LOG_LEVEL: 'warn',
      });
      const code = await child.exited;
      const summary = child.lines.find((l) => /units: succeeded/.test(l));
      if (code !== 0 || !summary?.includes(`${units} fetched`))
        throw new Error(`vcu-sync sync units exited ${code}: ${child.lines.slice(-20).join('\n')}`);
      cpu = Number(child.stderr().match(/BENCH_CPU_US=(\d+)/)?.[1] ?? Number.NaN) / 1e6;
    });
    return { seconds, cpu };
  };
  const bare = async (round: number): Promise<Run> => {
    options.say(`unpaginated units: baseline (stream split + JSON.parse + upsert), round ${round}`);
    let cpu = 0;
    let written = 0;
    const { seconds } = await timed(async () => {
      cpu = await cpuSeconds(async () => {
        written = await bareStreamSync(
          sim.url,
          path.join(options.dir, `unpaginated-baseline-${round}.db`),
          { table: 'unit_operations', path: '/integration/v1/units' },
          {
            pageSize: PAGE_SIZE,
            synchronous: SYNCHRONOUS,
            apiKey: 'sim-api-key',
            perCommit: BASELINE_PER_COMMIT,
          },
        );
      });
    });
    if (written !== units) throw new Error(`baseline wrote ${written} of ${units}`);
    return { seconds, cpu };
  };
  try {
    const done = await alternateRounds(rounds, bare, ours);
    const rates = summarizeRates(
      done.map((d) => ({ value: units / d.ours.seconds, baseline: units / d.baseline.seconds })),
    );
    const cpuRatio = median(done.map((d) => d.baseline.cpu / d.ours.cpu));
    const mid = (pick: (d: (typeof done)[number]) => number) => median(done.map(pick));
    const machine = describeMachine();
    return [
      {
        scenario: `\`vcu-sync sync units\`, ${units} unit operations in one unpaginated body`,
        measure: 'records/s',
        value: rates.value,
        baseline: rates.baseline,
        ratio: rates.ratio,
        target: '>= 1.0 x baseline',
        met: rates.ratio >= 1,
        notes:
          `median of ${rounds} round(s), the baseline first in odd rounds (${rates.spread}); ` +
          `child process \`vcu-sync sync units\` (${cli.kind}), start-up included; baseline in-process, ` +
          `transactions of ${BASELINE_PER_COMMIT}; synchronous=${SYNCHRONOUS} both sides; ` +
          `${machine.cores} cores, ${machine.memoryGiB} GiB, load ${os.loadavg()[0]?.toFixed(1)}; ` +
          `CPU-time ratio ${cpuRatio.toFixed(2)}x`,
        // CPU seconds: the child's whole life (start-up included) and the baseline's loop alone.
        extra: {
          daemonSeconds: mid((d) => d.ours.seconds),
          baselineSeconds: mid((d) => d.baseline.seconds),
          daemonCpuSeconds: mid((d) => d.ours.cpu),
          baselineCpuSeconds: mid((d) => d.baseline.cpu),
          cpuRatio,
          load1: os.loadavg()[0] ?? 0,
        },
      },
    ];
  } finally {
    await sim.close();
  }
}
