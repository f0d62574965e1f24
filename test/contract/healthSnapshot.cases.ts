import { describe, expect, it } from 'vitest';
import { readHealth } from '../../src/health/readHealth.js';
import type { Series } from '../../src/health/series.js';
import { DRIFT_CASES, driftAgainstSimulator } from './healthDrift.js';
import { RECONCILE_CASES, reconcileAgainstPass } from './healthReconcile.js';
import {
  CONFIG,
  HEALTH_CASES,
  type Health,
  type HealthCase,
  type HealthStore,
  NOW,
  operation,
  syncRun,
} from './healthStores.js';

/**
 * The health snapshot, the same situations on SQLite (healthSnapshot.sqlite.test.ts) and PostgreSQL
 * (healthSnapshot.pg.test.ts): written through the same statements, read back so the same rules
 * raise the same problems, and the status page's charts drawn from them.
 */

export type { Health };

/** What a store adds of its own, beside the cases' shared assertions. */
export interface HealthSide {
  /** Asserts the parts of the snapshot only this store has (PostgreSQL's replicas). */
  ownParts(snapshot: Health['snapshot']): void;
  /** Further assertions on what the case read (PostgreSQL's: the same as SQLite's). */
  also?(c: HealthCase, health: Health, series: Series): Promise<void>;
}

/** Registers the cases on the store `name`; `open` gives each case an empty store. */
export function healthSnapshotCases(name: string, open: () => Promise<HealthStore>, side: HealthSide): void {
  describe(`the health snapshot on ${name}`, () => {
    it.each([...HEALTH_CASES, ...DRIFT_CASES, ...RECONCILE_CASES])('$name', async (c) => {
      const store = await open();
      try {
        await c.seed(store.exec);
        const health = await readHealth(store.reads, CONFIG, NOW);
        expect(health.problems.map((p) => p.code).sort()).toEqual([...c.codes].sort());
        expect(health.snapshot.database.readError).toBeNull();
        c.check?.(health);
        side.ownParts(health.snapshot);
        // The status page's charts.
        const series = await store.reads.series(NOW);
        expect(series.queueDepth).toHaveLength(25);
        if (c.name.startsWith('a worst day')) {
          // A day with something to show draws it (runs, a queue, webhooks), not empty charts.
          expect(series.syncDurations.length).toBeGreaterThan(0);
          expect(series.queueDepth.some((p) => p.depth > 0)).toBe(true);
          expect(series.recentWebhooks.length).toBeGreaterThan(0);
        }
        await side.also?.(c, health, series);
      } finally {
        await store.close();
      }
    });

    driftAgainstSimulator(open);
    reconcileAgainstPass(open);

    it("draws the queue's depth at each hour's end in time order, and each run's seconds", async () => {
      const store = await open();
      try {
        // One queued row created every hour of the last 20: the depth rises by one an hour, so a
        // point out of order (ten before two) shows.
        for (let h = 20; h >= 1; h--) await operation(store.exec, `queued-${h}`, 'queued', h * 60 - 1);
        await syncRun(store.exec, 'projects', 'succeeded', 30);
        const series = await store.reads.series(NOW);
        const depths = series.queueDepth.map((p) => p.depth);
        expect(depths).toEqual([...depths].sort((a, b) => a - b));
        expect(depths.at(-1)).toBe(20);
        expect(
          depths.filter((d, i) => i > 0 && d === (depths[i - 1] ?? 0) + 1).length,
        ).toBeGreaterThanOrEqual(19);
        expect(series.syncDurations).toEqual([
          {
            resource: 'projects',
            at: new Date(NOW - 29 * 60_000).toISOString(),
            status: 'succeeded',
            seconds: 60,
          },
        ]);
      } finally {
        await store.close();
      }
    });
  });
}
