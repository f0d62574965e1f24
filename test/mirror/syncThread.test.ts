import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { feedHead } from '../../src/app/sqliteFeedReads.js';
import { SYNC_TARGETS, SyncRequests } from '../../src/common/syncRequests.js';
import { operatorRate } from '../../src/context.js';
import { createMirrorComponent } from '../../src/mirror/scheduler.js';
import { changeSignalFor } from '../../src/sqlite/changes.js';
import { createSyncThread } from '../../src/sqlite/syncThread.js';
import { assertNoPersonalData, enqueueOperationGrouped, tokenization } from '../outbox/fixtures.js';
import { captureLog, count, expectMirrorEqualsRegistry, type Harness, harness } from './harness.js';

/**
 * The daemon's syncs in their worker thread (sync.thread, the default): runs happen on the worker's
 * own connection while the main thread keeps committing enqueues; what the main thread serves
 * (feed wake-ups, metrics, logs, /status's rate) still hears of them. The system clock, as in
 * production: a worker cannot share an injected one. The operator has its bad habits on: a silent
 * cap on `limit` below the page size asked for.
 */
let h: Harness;
beforeEach(async () => {
  h = await harness(
    { projects: 40, issuances: 120, units: 4000, webhook: { policy: 'none' }, maxPageSize: 300 },
    { 'sync.page_size': 500, 'sync.on_startup': false, 'sync.jitter_seconds': 0 },
  );
});
afterEach(async () => {
  await h.close();
});

describe('sync thread', () => {
  it('syncs every target exactly while the main thread enqueues; feed, metrics and logs reach the main thread', async () => {
    const { ctx } = h;
    const lines = captureLog(ctx);
    const runner = createSyncThread(ctx, ctx.database.sqlite);
    const syncs = new SyncRequests();
    const mirror = createMirrorComponent(ctx, { syncRequests: syncs, runner });
    const signal = changeSignalFor(ctx.database.sqlite);
    const woken = signal.whenChanged(signal.version, AbortSignal.timeout(60_000));
    await mirror.start();
    try {
      const runs = Promise.all(SYNC_TARGETS.map((target) => runner.request(target, 'manual')));
      // Enqueues commit on the main connection while the worker's bulk writes hold the lock at times.
      const enqueued = [];
      for (let i = 0; i < 300; i++) {
        enqueued.push(enqueueOperationGrouped(ctx, tokenization(`thread-sync-${i}`, { unitId: 900 + i })));
        if (i % 10 === 0) await new Promise((r) => setImmediate(r));
      }
      expect((await Promise.all(enqueued)).map((r) => r.status)).toEqual(Array(300).fill(201));
      const outcomes = await runs;
      expect(outcomes.map((o) => [o.target, o.status, o.error])).toEqual(
        SYNC_TARGETS.map((t) => [t, 'succeeded', null]),
      );
      expect(outcomes.find((o) => o.target === 'units')?.counts.inserted).toBe(4000);
      expectMirrorEqualsRegistry(h);
      // The main connection's checkpoints are the worker's job while it runs.
      expect(ctx.database.sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
      expect(count(ctx, 'SELECT count(*) AS n FROM outbox')).toBe(300);

      // Feed readers waiting in the main thread were woken by the worker's commits, up to its head.
      await expect(woken).resolves.toBe(true);
      expect(feedHead(ctx.database.sqlite)).toBeGreaterThanOrEqual(4000 + 40 + 120);
      // The worker's counters land in the main registry; the rate of the budget its client shares is what /status shows.
      const runsCounted = (await ctx.metrics.syncRuns.get()).values.filter((v) => v.value > 0);
      expect(runsCounted.map((v) => v.labels.resource).sort()).toEqual([...SYNC_TARGETS].sort());
      expect(operatorRate(ctx)).toEqual({ current: 100_000, ceiling: 100_000 });
      // Its log lines reach the main logger, with the API key nowhere in them.
      const events = lines.map((l) => l.event);
      // The sync thread runs below the main thread's CPU priority, as the kernel itself reports.
      const started = lines.find((l) => l.event === 'sync.thread.started');
      expect(started?.priority).toMatchObject({ nice: 10 });
      const { tid } = started!.priority as { tid: number };
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      expect(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])).toBe(10);
      expect(Number(readFileSync('/proc/thread-self/stat', 'utf8').split(') ')[1]!.split(' ')[16])).toBe(0);
      expect(events.filter((e) => e === 'sync.run.finished')).toHaveLength(SYNC_TARGETS.length);
      const texts = lines.map((l) => JSON.stringify(l));
      expect(texts.filter((t) => t.includes('sim-api-key'))).toEqual([]);
      assertNoPersonalData(texts);
    } finally {
      await mirror.stop();
    }
    expect(count(ctx, "SELECT count(*) AS n FROM sync_runs WHERE status = 'running'")).toBe(0);
    // The main connection checkpoints again once the thread is gone.
    expect(ctx.database.sqlite.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
  });

  // Worker modules are named relative to src/mirror/, where the real ones live.
  it.each([
    ['cannot be loaded (an error, then its exit)', 'noSuchWorker'],
    ['exits as it loads, with no error at all', '../../test/mirror/fixtures/exitingWorker'],
  ])(
    'a thread whose module %s: the requests already made, and the later ones, run on the main thread',
    async (_, workerModule) => {
      const lines = captureLog(h.ctx);
      const runner = createSyncThread(h.ctx, h.ctx.database.sqlite, { workerModule });
      await runner.start?.();
      try {
        const early = runner.request('projects', 'startup');
        expect((await early).status).toBe('succeeded');
        expect((await runner.request('units', 'api')).status).toBe('succeeded');
        expectMirrorEqualsRegistry(h, ['projects', 'unit_operations']);
        expect(lines.map((l) => l.event)).toContain('sync.thread.unavailable');
      } finally {
        await runner.stop();
      }
    },
  );

  it('a request while the thread is not running is answered at once as failed, never left hanging', async () => {
    const runner = createSyncThread(h.ctx, h.ctx.database.sqlite);
    const outcome = await runner.request('projects', 'api');
    expect(outcome).toMatchObject({ target: 'projects', status: 'failed', runId: null });
    expect(outcome.error).toMatch(/sync thread is not running/);
  });
});
