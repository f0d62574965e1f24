import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { writeConfig } from './lib/benchConfig.js';
import { cliRunner } from './lib/build.js';
import { describeMachine } from './lib/machine.js';
import { spawnNode } from './lib/proc.js';
import type { BenchOptions, ScenarioResult } from './lib/result.js';
import { startSimChild } from './lib/simulator.js';
import { median } from './lib/timing.js';

const PRELOAD = pathToFileURL(path.join(import.meta.dirname, 'lib/maxRss.mjs')).href;

/** Runs `node ARGS` with the peak-RSS preload and returns its peak RSS in MB. */
async function peakRssMb(args: string[], env: NodeJS.ProcessEnv = {}): Promise<number> {
  const child = spawnNode(args, env);
  const code = await child.exited;
  const m = child.stderr().match(/BENCH_MAXRSS_KB=(\d+)/);
  if (code !== 0 || !m) throw new Error(`child exited ${code}: ${child.stderr().slice(-3000)}`);
  return Number(m[1]) / 1024;
}

/**
 * Runs of the sync child: its peak moves by ~5 MB from one run to the next with the moment of a full
 * collection, so the figure is their median, with every run in the notes.
 */
const RUNS = 3;

/**
 * Peak RSS of `vcu-sync sync units` (a child process) reading the whole units list from a simulator
 * that ignores paging and streams it in one body, each run into a fresh database, versus a node
 * process that only starts.
 */
export async function unpaginatedRssScenario(options: BenchOptions): Promise<ScenarioResult[]> {
  const units = options.quick ? 50_000 : 1_000_000;
  const cli = await cliRunner(options.quick, options.say);
  const sim = await startSimChild(['--units', String(units), '--units-unpaginated', '--policy', 'none']);
  try {
    const config = writeConfig(
      options.dir,
      'rss',
      // A 2-minute request timeout needs a lease of at least twice that (config validation).
      '[operator]\nrate_per_second = 100000\ntimeout_ms = 120000\n[sync]\npage_size = 1000\n[outbox]\nlease_seconds = 300\n',
    );
    const runs: number[] = [];
    for (let run = 1; run <= (options.quick ? 1 : RUNS); run++) {
      options.say(`unpaginated units: vcu-sync sync units (${units} in one body, ${cli.kind}), run ${run}`);
      runs.push(
        await peakRssMb(cli.args(['sync', 'units', '--config', config], [PRELOAD]), {
          VCU_SYNC_DB: path.join(options.dir, `rss-${run}.db`),
          VCU_SYNC_OPERATOR_URL: sim.url,
          VCU_SYNC_API_KEY: 'sim-api-key',
          VCU_SYNC_LOG_LEVEL: 'warn',
        }),
      );
    }
    const value = median(runs);
    const baseline = await peakRssMb(['--import', PRELOAD, '-e', '']);
    // What V8 and libuv size themselves from: the figure is read beside the host's cores and memory.
    const machine = describeMachine();
    return [
      {
        scenario: `${units} unit operations served unpaginated`,
        measure: 'peak RSS (MB)',
        value,
        baseline,
        ratio: value / baseline,
        target: '< 120 MB',
        met: value < 120,
        notes:
          `child process \`vcu-sync sync units\` (${cli.kind}); peak (VmHWM) at exit, median of ` +
          `${runs.map((mb) => mb.toFixed(0)).join(', ')} MB; baseline \`node -e ''\`; ` +
          `host ${machine.cores} cores, ${machine.memoryGiB} GiB`,
      },
    ];
  } finally {
    await sim.close();
  }
}
