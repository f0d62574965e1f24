import { afterEach, expect, it } from 'vitest';
import { runSync } from '../../src/mirror/syncRun.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { type Harness, harness, noSleep } from '../mirror/harness.js';

/**
 * A failing test for the core (src/mirror/shape/, the coordinator's): a run that re-applies a
 * shape-quarantined record before its scan notes every field of that record as seen at the
 * re-application's time, before the scan starts; the scan's own records then do not move the fields'
 * last sight (seen once per run), so the complete scan's end finds them all "last seen before the
 * scan started" and records every field of the table as `field-removed`. With the system clock it
 * shows when the re-application and the scan's start fall in different milliseconds (seen on
 * PostgreSQL one run in two); a clock that ticks a millisecond a call shows it every time.
 */

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

it('a run that re-applies a quarantined record reports no field as removed when every record still has it', async () => {
  h = await harness({ projects: 30 }, { 'sync.page_size': 10 });
  let now = Date.parse('2026-05-01T00:00:00.000Z');
  h.ctx.clock = { now: () => ++now };
  const sync = async () => {
    const outcome = await runSync(h!.ctx, 'projects', {
      backend: sqliteBackend(h!.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(outcome.status, outcome.error ?? '').toBe('succeeded');
  };
  await sync();
  const ids = [...h.sim.registry.snapshot('projects').keys()];
  // A mapped number sent as a string: the record is quarantined (the default policy).
  h.sim.registry.change('projects', ids[2]!, { totalEstimatedUnits: '12' });
  await sync();
  // This run re-applies the quarantined record (still quarantined), then scans every record.
  await sync();
  const db = h.ctx.database.sqlite;
  expect(db.prepare('SELECT field, kind FROM schema_changes ORDER BY id').all()).toEqual([
    { field: 'totalEstimatedUnits', kind: 'type-changed' },
  ]);
  expect(db.prepare('SELECT count(*) AS n FROM schema_fields WHERE removed_at IS NOT NULL').get()).toEqual({
    n: 0,
  });
});
