/**
 * `npm run bench [-- --quick] [-- --only NAME,...]`: every scenario of issue 7 against the
 * simulator over loopback, each with its baseline measured in the same run. Prints one table,
 * writes bench-results/bench-<time>.json (and latest.json) with the machine description.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chaosScenario } from './chaos.js';
import { enqueueLatencyScenario } from './enqueueLatency.js';
import { feedLoadScenario } from './feedLoad.js';
import { fullSyncScenarios } from './fullSync.js';
import { describeMachine } from './lib/machine.js';
import { ROOT } from './lib/proc.js';
import type { Scenario, ScenarioResult } from './lib/result.js';
import { formatTable } from './lib/table.js';
import { longPollScenario } from './longPoll.js';
import { outboxDrainScenario } from './outboxDrain.js';
import { pgClaimHistoryScenario } from './pgClaimHistory.js';
import { pgDrainScenario } from './pgDrain.js';
import { pgSyncScenario } from './pgSync.js';
import { reconcileScenario } from './reconcile.js';
import { scalingScenario } from './scaling.js';
import { shapeCostScenario } from './shapeCost.js';
import { startupScenario } from './startup.js';
import { subscribersScenario } from './subscribers.js';
import { unpaginatedScenario } from './unpaginated.js';
import { unpaginatedRssScenario } from './unpaginatedRss.js';
import { webhooksScenario } from './webhooks.js';

/** Scenario files by short name, in the order of the table. */
const SCENARIOS: Record<string, Scenario> = {
  sync: fullSyncScenarios,
  shape: shapeCostScenario,
  rss: unpaginatedRssScenario,
  unpaginated: unpaginatedScenario,
  outbox: outboxDrainScenario,
  enqueue: enqueueLatencyScenario,
  webhooks: webhooksScenario,
  startup: startupScenario,
  scaling: scalingScenario,
  longpoll: longPollScenario,
  feedload: feedLoadScenario,
  subscribers: subscribersScenario,
  pgsync: pgSyncScenario,
  pgdrain: pgDrainScenario,
  pgclaim: pgClaimHistoryScenario,
  chaos: chaosScenario,
  reconcile: reconcileScenario,
};

/**
 * Scenarios too long for `--quick` (whose run a test executes): they run only when named or in full
 * (test/benchReconcile.test.ts runs `--quick --only reconcile`).
 */
const FULL_ONLY = new Set(['scaling', 'chaos', 'reconcile']);

function parseArgs(argv: string[]): { quick: boolean; only: string[]; out: string } {
  let quick = false;
  let only = Object.keys(SCENARIOS);
  let out = path.join(ROOT, 'bench-results');
  let named = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--quick') quick = true;
    else if (arg === '--only') {
      only = (argv[++i] ?? '').split(',').filter(Boolean);
      named = true;
      const unknown = only.filter((n) => !(n in SCENARIOS));
      if (unknown.length > 0 || only.length === 0)
        throw new Error(`--only: expected names from ${Object.keys(SCENARIOS).join(', ')}`);
    } else if (arg === '--out') out = path.resolve(argv[++i] ?? '');
    else throw new Error(`unknown option ${arg} (use --quick, --only NAME,..., --out DIR)`);
  }
  if (quick && !named) only = only.filter((n) => !FULL_ONLY.has(n));
  return { quick, only, out };
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  const dir = mkdtempSync(path.join(tmpdir(), 'vcu-sync-bench-'));
  const say = (line: string) => process.stderr.write(`[bench] ${line}\n`);
  const machine = describeMachine();
  say(`${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, node ${machine.node}`);
  const started = Date.now();
  const results: ScenarioResult[] = [];
  const failures: string[] = [];
  try {
    for (const name of args.only) {
      const t0 = Date.now();
      try {
        results.push(...(await SCENARIOS[name]!({ quick: args.quick, dir, say })));
      } catch (err) {
        failures.push(`${name}: ${(err as Error).stack ?? String(err)}`);
        say(`${name} FAILED: ${(err as Error).message}`);
      }
      say(`${name} took ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const table = formatTable(results);
  process.stdout.write(`${table}\n`);
  mkdirSync(args.out, { recursive: true });
  const report = {
    at: new Date(started).toISOString(),
    mode: args.quick ? 'quick' : 'full',
    durationSeconds: (Date.now() - started) / 1000,
    machine,
    results,
    failures,
  };
  const stamp = report.at.replaceAll(':', '-').replace(/\.\d+Z$/, 'Z');
  const file = path.join(args.out, `bench-${report.mode}-${stamp}.json`);
  writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(path.join(args.out, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`results written to ${path.relative(process.cwd(), file)}\n`);
  for (const f of failures) process.stderr.write(`FAILED ${f}\n`);
  return failures.length > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench: ${(err as Error).message}\n`);
    process.exit(2);
  },
);
