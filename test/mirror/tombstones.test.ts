import { afterEach, describe, expect, it } from 'vitest';
import { runSync } from '../../src/mirror/syncRun.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { count, expectMirrorEqualsRegistry, type Harness, harness, noSleep } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const PROJECTS = '/integration/v1/projects';

describe('paging drift and tombstones', () => {
  it('converges after records move under the pager, with no duplicates', async () => {
    h = await harness({ projects: 120 }, { 'sync.page_size': 20 });
    await runSync(h.ctx, 'projects', { backend: sqliteBackend(h.ctx.database.sqlite), sleep: noSleep });
    // Page 2 sees 3 records removed before it; page 4 sees 2 inserted before it.
    h.sim.faults.next(1, 'latency', { latencyMs: 1, pathPrefix: PROJECTS });
    h.sim.faults.next(1, 'drift', { driftOp: 'remove', driftCount: 3, pathPrefix: PROJECTS });
    h.sim.faults.next(1, 'latency', { latencyMs: 1, pathPrefix: PROJECTS });
    h.sim.faults.next(1, 'drift', { driftOp: 'insert', driftCount: 2, pathPrefix: PROJECTS });
    const drifted = await runSync(h.ctx, 'projects', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(drifted.status).toBe('succeeded');
    // Records moved under the pager: that scan may have skipped some, so it removes nothing.
    expect(drifted.counts.removed).toBe(0);
    expect(h.sim.faults.injected.filter((f) => f.kind === 'drift')).toHaveLength(2);
    const settled = await runSync(h.ctx, 'projects', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(settled).toMatchObject({ status: 'succeeded', counts: { removed: 3 } });
    expectMirrorEqualsRegistry(h, ['projects']);
    expect(count(h.ctx, 'SELECT count(*) n FROM projects WHERE _removed_at IS NOT NULL')).toBe(3);
    // One insert per key ever, whatever the pager saw twice.
    expect(
      count(
        h.ctx,
        "SELECT count(*) n FROM (SELECT record_id FROM changes WHERE kind = 'insert' GROUP BY record_id HAVING count(*) > 1)",
      ),
    ).toBe(0);
    expect(count(h.ctx, 'SELECT count(*) n FROM sync_seen')).toBe(0);
  });

  it('refuses to wipe the mirror when the upstream suddenly answers an empty list', async () => {
    h = await harness();
    await runSync(h.ctx, 'projects', { backend: sqliteBackend(h.ctx.database.sqlite), sleep: noSleep });
    for (const id of h.sim.registry.snapshot('projects').keys()) h.sim.registry.remove('projects', id);
    const outcome = await runSync(h.ctx, 'projects', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(outcome.status).toBe('failed');
    expect(outcome.error).toMatch(/refused to mark 20 of 20 projects removed.*max_remove_share=0.5/);
    expect(count(h.ctx, 'SELECT count(*) n FROM projects WHERE _removed_at IS NULL')).toBe(20);
    expect(count(h.ctx, "SELECT count(*) n FROM changes WHERE kind = 'remove'")).toBe(0);
    const run = h.ctx.database.sqlite
      .prepare('SELECT status, error FROM sync_runs ORDER BY id DESC LIMIT 1')
      .get();
    expect(run).toEqual({ status: 'failed', error: outcome.error });
  });

  it('removes a share within the limit', async () => {
    h = await harness({}, { 'sync.max_remove_share': 0.25 });
    await runSync(h.ctx, 'projects', { backend: sqliteBackend(h.ctx.database.sqlite), sleep: noSleep });
    const ids = [...h.sim.registry.snapshot('projects').keys()];
    for (const id of ids.slice(0, 5)) h.sim.registry.remove('projects', id);
    const outcome = await runSync(h.ctx, 'projects', {
      backend: sqliteBackend(h.ctx.database.sqlite),
      sleep: noSleep,
    });
    expect(outcome).toMatchObject({ status: 'succeeded', counts: { removed: 5 } });
    expectMirrorEqualsRegistry(h, ['projects']);
  });
});
