import { runSync } from '../../src/mirror/syncRun.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { testContext } from '../helpers/context.js';
import type { BenchOptions, ScenarioResult } from './lib/result.js';
import { startRegistrySim, syncOverrides } from './lib/simulator.js';
import { median, timed } from './lib/timing.js';

const PAGE_SIZE = 1000;
/** On and off in turn, each first as often as the other, so neither gains from warming up. */
const ORDER = ['on', 'off', 'off', 'on', 'on', 'off'] as const;

/**
 * What learning the records' shape costs a full sync (issue 28: at most 3 %): the units log synced
 * in full into a fresh file with `[sync.schema] learn` on and off in turn, three times each, against
 * one simulator child; the median of each side and their spread.
 */
export async function shapeCostScenario(options: BenchOptions): Promise<ScenarioResult[]> {
  const units = options.quick ? 20_000 : 300_000;
  const sim = await startRegistrySim({ projects: 100, issuances: 100, units }, PAGE_SIZE);
  const rates: Record<(typeof ORDER)[number], number[]> = { on: [], off: [] };
  try {
    for (const mode of ORDER) {
      options.say(`schema learning ${mode}: full units sync (${units} records)`);
      const ctx = testContext({
        overrides: {
          ...syncOverrides(sim, PAGE_SIZE),
          'database.synchronous': 'full',
          'sync.schema': { learn: mode === 'on' },
        },
      });
      try {
        const run = await timed(() =>
          runSync(ctx, 'units', { backend: sqliteBackend(ctx.database.sqlite), full: true }),
        );
        if (run.result.status !== 'succeeded')
          throw new Error(`units: ${run.result.status}: ${run.result.error}`);
        rates[mode].push(units / run.seconds);
      } finally {
        ctx.operator().close();
        ctx.dispose();
      }
    }
  } finally {
    await sim.close();
  }
  const on = median(rates.on);
  const off = median(rates.off);
  const spread = (values: number[]) =>
    `${Math.round(Math.min(...values))}-${Math.round(Math.max(...values))}`;
  return [
    {
      scenario: `full units sync (${units}), schema learning on against off`,
      measure: 'records/s',
      value: on,
      baseline: off,
      ratio: on / off,
      target: '>= 0.97 x learning off',
      met: on >= 0.97 * off,
      notes: `in-process runSync, simulator in a child; page size ${PAGE_SIZE}; synchronous=full; medians of 3 each, in the order ${ORDER.join(', ')}; on ${spread(rates.on)}, off ${spread(rates.off)} records/s`,
      extra: { onRuns: rates.on.map(Math.round).join(' '), offRuns: rates.off.map(Math.round).join(' ') },
    },
  ];
}
