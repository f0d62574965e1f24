import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { runSync } from '../../src/mirror/syncRun.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { testContext } from '../helpers/context.js';
import { sqliteApiComponent } from '../helpers/sqliteApi.js';
import { type BenchOptions, ratioOf, type ScenarioResult } from './lib/result.js';
import { startRegistrySim, syncOverrides } from './lib/simulator.js';
import { quantile, timed } from './lib/timing.js';
import { unitsQueryMix } from './lib/unitsQueries.js';

const PAGE_SIZE = 1000;
const SYNCHRONOUS = 'full';
const API_TOKEN = 'bench-api-token-0123456789';
const ISSUANCES = 50_000;

/**
 * Scaling curve (issue 17, item 6): a units sync into a fresh database at growing sizes, in seconds
 * per million operations (flat within 20 % is the target: cost per operation must not grow with the
 * log), then `GET /v1/units` with filters on the largest mirror, p99 over loopback against the same
 * SQL run directly in the same run.
 */
export async function scalingScenario(options: BenchOptions): Promise<ScenarioResult[]> {
  const sizes = options.quick ? [10_000, 30_000, 100_000] : [100_000, 300_000, 1_000_000, 3_000_000];
  const requests = options.quick ? 300 : 2_000;
  const perMillion: number[] = [];
  const results: ScenarioResult[] = [];
  let largest: ReturnType<typeof testContext> | undefined;
  try {
    for (const size of sizes) {
      const sim = await startRegistrySim({ projects: 200, issuances: ISSUANCES, units: size }, PAGE_SIZE);
      const ctx = testContext({
        overrides: {
          ...syncOverrides(sim, PAGE_SIZE),
          'database.synchronous': SYNCHRONOUS,
          'api.listen': '127.0.0.1:0',
          'api.token': API_TOKEN,
        },
      });
      try {
        options.say(`scaling: sync ${size} units into a fresh database`);
        const run = await timed(() => runSync(ctx, 'units', { backend: sqliteBackend(ctx.database.sqlite) }));
        if (run.result.status !== 'succeeded') throw new Error(`units: ${run.result.error}`);
        const stored = ctx.database.sqlite.prepare('SELECT count(*) FROM unit_operations').pluck().get();
        if (stored !== size) throw new Error(`mirror holds ${String(stored)} of ${size} unit operations`);
        perMillion.push(run.seconds / (size / 1_000_000));
        options.say(`scaling: ${size} units in ${run.seconds.toFixed(1)} s`);
      } finally {
        ctx.operator().close();
        await sim.close();
        if (size === sizes.at(-1)) largest = ctx;
        else ctx.dispose();
      }
    }
    const fastest = Math.min(...perMillion);
    sizes.forEach((size, i) => {
      const value = perMillion[i]!;
      const ratio = ratioOf(value, fastest)!;
      results.push({
        scenario: `scaling: sync ${size} units, fresh database`,
        measure: 's per million',
        value,
        baseline: fastest,
        ratio,
        target: '<= 1.2 x fastest size',
        met: ratio <= 1.2,
        notes: `in-process runSync, simulator in a child; page size ${PAGE_SIZE}; synchronous=${SYNCHRONOUS}; baseline: the fastest size in this run`,
      });
    });
    const spread = Math.max(...perMillion) / fastest;
    results.push({
      scenario: `scaling: spread of s per million over ${sizes.join(', ')} units`,
      measure: 'max/min',
      value: spread,
      baseline: null,
      ratio: null,
      target: '<= 1.2',
      met: spread <= 1.2,
      notes: sizes.map((s, i) => `${s}: ${perMillion[i]!.toFixed(1)} s/M`).join('; '),
    });
    results.push(await unitsApiP99(largest!, sizes.at(-1)!, requests, options));
    return results;
  } finally {
    largest?.dispose();
  }
}

/** p99 of `GET /v1/units` with filters and keyset pages, against the same queries run directly. */
export async function unitsApiP99(
  ctx: ReturnType<typeof testContext>,
  size: number,
  requests: number,
  options: BenchOptions,
): Promise<ScenarioResult> {
  const mix = unitsQueryMix(ctx.database.sqlite, requests);
  const api = sqliteApiComponent(ctx);
  await api.start();
  const base = `http://127.0.0.1:${api.address()!.port}`;
  try {
    options.say(`scaling: ${requests} GET /v1/units with filters on the ${size}-row mirror`);
    // The whole mix once directly, so both measured passes find the same pages cached (the first
    // pass would otherwise pay the cold reads for the second), and the API's code paths warmed.
    for (const q of mix) q.direct();
    for (const q of mix.slice(0, 30)) await q.http(base, API_TOKEN);
    const viaApi: number[] = [];
    const byShape = new Map<string, { api: number[]; direct: number[] }>();
    // Where a slow request's time goes besides the query: garbage collection pauses and event-loop
    // delay while the API pass runs (client and server share this process and its loop).
    const gc: number[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) gc.push(entry.duration);
    });
    observer.observe({ entryTypes: ['gc'] });
    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    for (const q of mix) {
      const times = await q.http(base, API_TOKEN);
      viaApi.push(...times);
      const entry = byShape.get(q.shape) ?? { api: [], direct: [] };
      entry.api.push(...times);
      byShape.set(q.shape, entry);
    }
    loop.disable();
    observer.disconnect();
    // The same pages turned into the API's JSON body, without HTTP.
    const serialized: number[] = [];
    for (const q of mix) serialized.push(...q.direct(true));
    // Any filter whose plan sorts (a temporary B-tree) or scans the table reads more than its page.
    const plans = new Map<string, string[]>();
    for (const q of mix) if (!plans.has(q.shape)) plans.set(q.shape, q.plan());
    const badPlans = [...plans].filter(([, p]) =>
      p.some((d) => /TEMP B-TREE|^SCAN unit_operations$/.test(d)),
    );
    const direct: number[] = [];
    for (const q of mix) {
      const times = q.direct();
      direct.push(...times);
      byShape.get(q.shape)!.direct.push(...times);
    }
    // Per kind of filter, so a slow one stands out: "api p99 / direct p99" in ms.
    const shapes = Object.fromEntries(
      [...byShape].map(([shape, t]) => [
        `p99 ${shape}`,
        `${quantile(t.api, 0.99).toFixed(1)} / ${quantile(t.direct, 0.99).toFixed(1)}`,
      ]),
    );
    const p99 = quantile(viaApi, 0.99);
    const baseP99 = quantile(direct, 0.99);
    return {
      scenario: `GET /v1/units with filters, ${size}-row mirror`,
      measure: 'p99 ms',
      value: p99,
      baseline: baseP99,
      ratio: ratioOf(p99, baseP99),
      target: '< 20 ms',
      met: p99 < 20,
      notes:
        'API component in this process over loopback, one request at a time; filters issuance, status, type, from/to and combinations, limit 100, following cursors up to 3 pages; baseline: the same listRecords SQL run directly',
      extra: {
        requests: viaApi.length,
        p50: quantile(viaApi, 0.5),
        baselineP50: quantile(direct, 0.5),
        max: Math.max(...viaApi),
        baselineMax: Math.max(...direct),
        directWithJsonP99: quantile(serialized, 0.99),
        directWithJsonP50: quantile(serialized, 0.5),
        gcPauses: gc.length,
        gcTotalMs: gc.reduce((a, b) => a + b, 0),
        gcMaxMs: gc.length ? Math.max(...gc) : 0,
        loopDelayP99Ms: loop.percentile(99) / 1e6,
        loopDelayMaxMs: loop.max / 1e6,
        plansThatSortOrScan: badPlans.map(([shape, p]) => `${shape}: ${p.join('; ')}`).join(' | ') || 'none',
        ...Object.fromEntries([...plans].map(([shape, p]) => [`plan ${shape}`, p.join('; ')])),
        ...shapes,
      },
    };
  } finally {
    await api.stop();
  }
}
