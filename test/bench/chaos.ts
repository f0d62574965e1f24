import { mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { FAULTS, type FaultName, type FaultTimes, ISSUE_FAULT_TIMES } from '../helpers/chaos/faults.js';
import { startChaos } from '../helpers/chaos/harness.js';
import { type ChaosVerdict, chaosVerdict, type PhaseVerdict } from '../helpers/chaos/verdict.js';
import { cliRunner } from './lib/build.js';
import { type BenchOptions, postgresMissing, type ScenarioResult } from './lib/result.js';

/**
 * The issue's producer: 100 operations a second through both APIs; `BENCH_CHAOS_RATE=N` offers N
 * instead, to see the faults' effect on a machine where two replicas cannot keep up with 100.
 */
const RATE = Number(process.env.BENCH_CHAOS_RATE ?? '') || 100;
/** Seconds of the clean phase and of each recovery phase. */
const CLEAN_SECONDS = 20;
const RECOVERY_SECONDS = 20;
/** `--quick`: every phase a few seconds. */
const QUICK_TIMES: FaultTimes = {
  restartDownSeconds: 3,
  backendKillSeconds: 3,
  killsPerSecond: 2,
  poolHoldSeconds: 3,
  crashDownSeconds: 2,
  idleTxSeconds: 3,
};
/** The longest an API request may take, ms (the issue: no request hangs over 10 s). */
const MAX_LATENCY_MS = 10_000;
/** Completion during a fault, as a ratio of clean, where the issue sets one. */
const DURING_TARGET: Partial<Record<FaultName, number>> = { idle_in_tx: 0.7, pool_exhaustion: 0.7 };
const AFTER_TARGET = 0.9;

const NOTES = `two \`vcu-sync run\` replicas on a private cluster (fsync off, max_connections 100), in-process simulator approving every operation by webhook through a balancer, ${RATE} ops/s POSTed to both APIs; rates are operations reaching a final state per second`;

/** One fault's rows of the table. */
function phaseRows(v: ChaosVerdict, p: PhaseVerdict): ScenarioResult[] {
  const during = DURING_TARGET[p.fault];
  const lost = p.lostAcknowledged + p.lostDecisions;
  return [
    {
      scenario: `chaos ${p.fault}: completion during`,
      measure: 'ops/s',
      value: p.rateDuring * v.cleanRate,
      baseline: v.cleanRate,
      ratio: p.rateDuring,
      target: during === undefined ? 'reported' : `>= ${during} x clean`,
      met: during === undefined || p.rateDuring >= during,
      notes: `${p.detail}; ${NOTES}`,
    },
    {
      scenario: `chaos ${p.fault}: completion after`,
      measure: 'ops/s',
      value: p.rateAfter * v.cleanRate,
      baseline: v.cleanRate,
      ratio: p.rateAfter,
      target: `>= ${AFTER_TARGET} x clean`,
      met: p.rateAfter >= AFTER_TARGET,
      notes: `the ${RECOVERY_SECONDS} s after the fault`,
    },
    {
      scenario: `chaos ${p.fault}: duplicates`,
      measure: '/notify repeats',
      value: p.duplicates,
      baseline: p.inFlightAtFault,
      ratio: null,
      target: '<= sends in flight at the fault',
      met: p.duplicates <= p.inFlightAtFault,
      notes: 'baseline column: rows in `sending` when the fault struck (summed over its injections)',
    },
    {
      scenario: `chaos ${p.fault}: lost acknowledged + decisions`,
      measure: 'operations',
      value: lost,
      baseline: null,
      ratio: null,
      target: '0',
      met: lost === 0,
      notes: `${p.lostAcknowledged} acknowledged, ${p.lostDecisions} decisions`,
    },
    {
      scenario: `chaos ${p.fault}: max API latency`,
      measure: 'ms',
      value: p.maxLatencyMs,
      baseline: null,
      ratio: null,
      target: `< ${MAX_LATENCY_MS} ms`,
      met: p.maxLatencyMs < MAX_LATENCY_MS && p.hung === 0,
      notes: `${p.hung} requests unanswered; ${p.shed} ticks shed (200 requests in flight already)`,
    },
  ];
}

/** The run's own row: both replicas alive, nothing lost anywhere, every row final. */
function runRow(v: ChaosVerdict): ScenarioResult {
  const ok =
    v.unexpectedExits === 0 &&
    v.aliveAtEnd === v.replicas &&
    v.lostAcknowledged.length === 0 &&
    v.lostDecisions.length === 0 &&
    v.unfinished.length === 0;
  return {
    scenario: 'chaos: whole run',
    measure: 'clean ops/s',
    value: v.cleanRate,
    baseline: null,
    ratio: null,
    target: 'replicas alive, 0 lost, all final',
    met: ok,
    notes: `${v.acknowledged} acknowledged, ${v.shed} ticks shed; ${v.unexpectedExits} unexpected exits; ${v.aliveAtEnd}/${v.replicas} alive; ${v.lostAcknowledged.length} acknowledged lost; ${v.lostDecisions.length} decisions lost; ${v.unfinished.length} rows not final; ${v.duplicates} duplicates for ${v.inFlightAtFaults} in flight`,
    extra: { acknowledged: v.acknowledged, duplicates: v.duplicates, inFlightAtFaults: v.inFlightAtFaults },
  };
}

/**
 * Chaos (issue 25, item 3): the five faults in turn on two replicas under the issue's producer, each
 * followed by a recovery phase; per fault the completion rate during and after (ratios of the clean
 * phase's), the duplicates, what was lost, the slowest API request. Skipped where no PostgreSQL is
 * installed. Takes about 5 minutes in full.
 */
export async function chaosScenario(options: BenchOptions): Promise<ScenarioResult[]> {
  if (postgresMissing('chaos', options)) return [];
  const runner = await cliRunner(options.quick, options.say);
  const dir = mkdtempSync(path.join(options.dir, 'chaos-'));
  const rig = await startChaos({
    dir,
    ratePerSecond: RATE,
    cleanSeconds: options.quick ? 3 : CLEAN_SECONDS,
    recoverySeconds: options.quick ? 3 : RECOVERY_SECONDS,
    times: options.quick ? QUICK_TIMES : ISSUE_FAULT_TIMES,
    cliArgs: (a) => runner.args(a),
    say: options.say,
  });
  try {
    const verdict = chaosVerdict(await rig.run(FAULTS));
    for (const p of verdict.phases)
      options.say(
        `chaos ${p.fault}: during ${p.rateDuring.toFixed(2)}, after ${p.rateAfter.toFixed(2)}, duplicates ${p.duplicates}/${p.inFlightAtFault}, lost ${p.lostAcknowledged}+${p.lostDecisions}, max latency ${Math.round(p.maxLatencyMs)} ms (${p.detail})`,
      );
    if (verdict.unexpectedExits > 0) options.say(`chaos: replicas exited:\n${rig.outputs().slice(-3000)}`);
    return [...verdict.phases.flatMap((p) => phaseRows(verdict, p)), runRow(verdict)];
  } finally {
    await rig.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
