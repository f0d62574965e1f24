import { expect } from 'vitest';
import type { FaultName, FaultTimes } from '../helpers/chaos/faults.js';
import type { ChaosRig } from '../helpers/chaos/harness.js';
import { type ChaosVerdict, chaosVerdict } from '../helpers/chaos/verdict.js';
import { assertNoPersonalData } from '../outbox/fixtures.js';

/**
 * The chaos tests' short phases: a few seconds each, so a file stays well under two minutes on a
 * loaded CI machine. The faults are the issue's, only shorter; the bench (`npm run bench -- --only
 * chaos`) runs them at full length and measures the rates.
 */
export const SHORT_TIMES: FaultTimes = {
  restartDownSeconds: 3,
  backendKillSeconds: 3,
  killsPerSecond: 2,
  poolHoldSeconds: 3,
  crashDownSeconds: 2,
  idleTxSeconds: 3,
};

/** The rig's progress lines, on stderr with the time when CHAOS_PROGRESS is set (default: silent). */
export const progress = (line: string): void => {
  if (process.env.CHAOS_PROGRESS) process.stderr.write(`${new Date().toISOString()} ${line}\n`);
};

/** The tests' offered load: lighter than the bench's 100/s, the machine is shared. */
export const SHORT_RATE = 25;

/**
 * Runs `faults` on the rig and asserts the end states: both replicas alive (none exited
 * but the one SIGKILLed on purpose), no acknowledged operation lost, every decision recorded, every
 * row final, no duplicate beyond the sends in flight at the faults, no API request left unanswered;
 * then both replicas stop cleanly and nothing personal reached their logs.
 */
export async function runAndCheck(rig: ChaosRig, faults: readonly FaultName[]): Promise<ChaosVerdict> {
  const observed = await rig.run(faults);
  const verdict = chaosVerdict(observed);
  const origin = observed.windows[0]?.startMs ?? 0;
  const windows = observed.windows.map(
    (w) =>
      `${w.kind} ${w.fault ?? ''} ${w.startMs - origin}..${w.endMs - origin} ms, in flight ${w.inFlightAtFault}`,
  );
  // What the unfinished rows wait in (sending, accepted...): the first thing to read on a failure.
  const unfinishedBy: Record<string, number> = {};
  for (const r of observed.rows)
    if (verdict.unfinished.includes(r.ref)) unfinishedBy[r.state] = (unfinishedBy[r.state] ?? 0) + 1;
  const context = () =>
    `${JSON.stringify({ unfinishedBy, windows, ...verdict }, null, 1).slice(0, 6000)}\n${rig.outputs()}`;
  expect(verdict.unexpectedExits, context()).toBe(0);
  expect(verdict.aliveAtEnd, context()).toBe(2);
  expect(verdict.phases.map((p) => p.fault)).toEqual(faults);
  // Operations went through during the run (the producer was answered), and none was lost.
  expect(verdict.acknowledged, context()).toBeGreaterThan(observed.produced.length / 2);
  expect(verdict.lostAcknowledged, context()).toEqual([]);
  expect(verdict.lostDecisions, context()).toEqual([]);
  expect(verdict.unfinished, context()).toEqual([]);
  expect(
    observed.decisions.every((d) => d.delivered),
    context(),
  ).toBe(true);
  expect(verdict.duplicates, context()).toBeLessThanOrEqual(verdict.inFlightAtFaults);
  expect(verdict.hung, context()).toBe(0);
  const codes = await rig.close();
  expect(codes, context()).toEqual([0, 0]);
  assertNoPersonalData([rig.outputs()]);
  return verdict;
}
