import path from 'node:path';
import type { SyncTarget } from '../../src/common/syncRequests.js';
import { runSync } from '../../src/mirror/syncRun.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { testContext } from '../helpers/context.js';
import { type BaselineList, bareSync, fetchOnly, writeOnly } from './lib/baselineSync.js';
import { type BenchOptions, ratioOf, type ScenarioResult } from './lib/result.js';
import { fullSyncSize, startRegistrySim, syncOverrides } from './lib/simulator.js';
import { timed } from './lib/timing.js';

/** Both sides use the production default, so the figure is what a deployment sees. */
const SYNCHRONOUS = 'full';
const PAGE_SIZE = 1000;

/**
 * Full sync, re-sync with nothing changed, and incremental units after +1% new operations: vcu-sync's
 * runSync in this process against a simulator child, versus a bare got + better-sqlite3 loop.
 */
export async function fullSyncScenarios(options: BenchOptions): Promise<ScenarioResult[]> {
  const size = fullSyncSize(options.quick);
  const total = size.projects + size.issuances + size.units;
  const sim = await startRegistrySim(size, PAGE_SIZE);
  const ctx = testContext({
    overrides: { ...syncOverrides(sim, PAGE_SIZE), 'database.synchronous': SYNCHRONOUS },
  });
  try {
    const syncAll = async (targets: readonly SyncTarget[], full: boolean) => {
      for (const target of targets) {
        const outcome = await runSync(ctx, target, { backend: sqliteBackend(ctx.database.sqlite), full });
        if (outcome.status !== 'succeeded') throw new Error(`${target}: ${outcome.status}: ${outcome.error}`);
      }
    };
    const lists = ['projects', 'issuances', 'units'] as const;

    const baselineLists: BaselineList[] = [
      { table: 'projects', path: '/integration/v1/projects' },
      { table: 'issuances', path: '/integration/v1/issuances' },
      { table: 'unit_operations', path: '/integration/v1/units' },
    ];
    const bare = { pageSize: PAGE_SIZE, synchronous: SYNCHRONOUS, apiKey: 'sim-api-key' } as const;
    options.say(`full sync: serial baseline (${total} records)`);
    const base = await timed(() =>
      bareSync(sim.url, path.join(options.dir, 'baseline-sync.db'), baselineLists, bare),
    );
    if (base.result !== total) throw new Error(`baseline read ${base.result} of ${total} records`);

    // The two halves of the serial baseline, each alone: a sync that overlaps fetching with
    // writing perfectly takes as long as the slower of them.
    options.say('full sync: fetch-only baseline');
    const fetchSide = await timed(() => fetchOnly(sim.url, baselineLists, bare, true));
    if (fetchSide.result.records !== total) throw new Error(`fetch-only read ${fetchSide.result.records}`);
    options.say('full sync: write-only baseline');
    const writeSide = writeOnly(path.join(options.dir, 'baseline-write.db'), fetchSide.result.bodies, bare);
    if (writeSide.records !== total) throw new Error(`write-only wrote ${writeSide.records}`);
    fetchSide.result.bodies.clear();
    const bound = Math.max(fetchSide.seconds, writeSide.seconds);

    options.say('full sync: vcu-sync');
    const full = await timed(() => syncAll(lists, false));
    const stored = ctx.database.sqlite.prepare('SELECT count(*) AS n FROM unit_operations').get() as {
      n: number;
    };
    if (stored.n !== size.units) throw new Error(`mirror holds ${stored.n} of ${size.units} unit operations`);

    options.say('re-sync, nothing changed');
    const resync = await timed(() => syncAll(lists, true));

    const added = Math.round(size.units * 0.01);
    await sim.admin('POST', '/_sim/units/append', { count: added });
    options.say(`incremental units (+${added})`);
    const incremental = await timed(() => syncAll(['units'], false));
    const after = ctx.database.sqlite.prepare('SELECT count(*) AS n FROM unit_operations').get() as {
      n: number;
    };
    if (after.n !== size.units + added) throw new Error(`incremental left ${after.n} unit operations`);

    const rate = total / full.seconds;
    const baseRate = total / base.seconds;
    const how = `in-process runSync, simulator in a child; page size ${PAGE_SIZE}; synchronous=${SYNCHRONOUS} both sides`;
    const fullRatio = ratioOf(rate, baseRate)!;
    const boundRatio = ratioOf(full.seconds, bound)!;
    const resyncRatio = ratioOf(resync.seconds, full.seconds)!;
    const incRatio = ratioOf(incremental.seconds, full.seconds)!;
    return [
      {
        scenario: `full sync (${size.projects} projects, ${size.issuances} issuances, ${size.units} units)`,
        measure: 'records/s',
        value: rate,
        baseline: baseRate,
        ratio: fullRatio,
        target: '>= 1.2 x baseline',
        met: fullRatio >= 1.2,
        notes: `${how}; baseline: serial got + better-sqlite3 loop`,
        extra: { records: total, seconds: full.seconds, baselineSeconds: base.seconds },
      },
      {
        scenario: 'full sync against max(fetch-only, write-only)',
        measure: 'seconds',
        value: full.seconds,
        baseline: bound,
        ratio: boundRatio,
        target: '<= 1.3 x max(fetch-only, write-only)',
        met: boundRatio <= 1.3,
        notes: `${how}; fetch-only: the same pages fetched and parsed; write-only: the same records upserted from memory (parse not timed)`,
        extra: { fetchOnlySeconds: fetchSide.seconds, writeOnlySeconds: writeSide.seconds },
      },
      {
        scenario: 're-sync, nothing changed',
        measure: 'seconds',
        value: resync.seconds,
        baseline: full.seconds,
        ratio: resyncRatio,
        target: '<= 0.4 x full sync',
        met: resyncRatio <= 0.4,
        notes: `${how}; units with --full (a complete re-scan)`,
      },
      {
        scenario: `incremental units after +1% (${added} new operations)`,
        measure: 'seconds',
        value: incremental.seconds,
        baseline: full.seconds,
        ratio: incRatio,
        target: '<= 0.05 x full sync',
        met: incRatio <= 0.05,
        notes: how,
      },
    ];
  } finally {
    ctx.operator().close();
    ctx.dispose();
    await sim.close();
  }
}
