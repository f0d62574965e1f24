import { afterEach, describe, expect, it } from 'vitest';
import { runSync } from '../../src/mirror/syncRun.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { count, expectMirrorEqualsRegistry, type Harness, harness, liveRows, noSleep } from './harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const sync = (target: 'projects' | 'issuances' | 'units' | 'custody', full = false) =>
  runSync(h!.ctx, target, { backend: sqliteBackend(h!.ctx.database.sqlite), sleep: noSleep, full });

describe('list sync', () => {
  it('mirrors the three lists field by field and feeds an insert per record', async () => {
    h = await harness();
    for (const t of ['projects', 'issuances', 'units'] as const)
      expect((await sync(t)).status).toBe('succeeded');
    expectMirrorEqualsRegistry(h);
    expect(count(h.ctx, "SELECT count(*) n FROM changes WHERE kind = 'insert'")).toBe(20 + 60 + 300);
    const runs = h.ctx.database.sqlite.prepare('SELECT * FROM sync_runs ORDER BY id').all() as Record<
      string,
      unknown
    >[];
    expect(runs.map((r) => [r.resource, r.status, r.inserted])).toEqual([
      ['projects', 'succeeded', 20],
      ['issuances', 'succeeded', 60],
      ['units', 'succeeded', 300],
    ]);
  });

  it('a second sync with nothing changed writes no row and adds no change', async () => {
    h = await harness();
    for (const t of ['projects', 'issuances'] as const) await sync(t);
    await sync('units', true);
    const changesBefore = count(h.ctx, 'SELECT count(*) n FROM changes');
    const snapshot = () =>
      ['projects', 'issuances', 'unit_operations'].map((t) =>
        h!.ctx.database.sqlite.prepare(`SELECT * FROM ${t} ORDER BY 1`).all(),
      );
    const rowsBefore = snapshot();
    const seenBefore = [...liveRows(h.ctx, 'projects').values()].map((r) => r._last_seen_at);
    const outcomes = [await sync('projects'), await sync('issuances'), await sync('units', true)];
    expect(outcomes.map((o) => [o.status, o.counts.inserted, o.counts.updated, o.counts.removed])).toEqual([
      ['succeeded', 0, 0, 0],
      ['succeeded', 0, 0, 0],
      ['succeeded', 0, 0, 0],
    ]);
    expect(outcomes.map((o) => o.counts.unchanged)).toEqual([20, 60, 300]);
    expect(count(h.ctx, 'SELECT count(*) n FROM changes')).toBe(changesBefore);
    expect([...liveRows(h.ctx, 'projects').values()].map((r) => r._last_seen_at)).toEqual(seenBefore);
    // Every mirror row byte for byte as before: no row was rewritten.
    expect(snapshot()).toEqual(rowsBefore);
  });

  it('added, changed and removed records show up as rows and changes', async () => {
    h = await harness();
    await sync('projects');
    const reg = h.sim.registry;
    const [first, second] = [...reg.snapshot('projects').keys()];
    reg.change('projects', first!, { projectName: 'Renamed' });
    reg.remove('projects', second!);
    const added = reg.add('projects', {
      ...reg.get('projects', first!)!,
      projectID: 999_999,
      projectName: 'New one',
    });
    const outcome = await sync('projects');
    expect(outcome.counts).toMatchObject({ inserted: 1, updated: 1, removed: 1, unchanged: 18 });
    expectMirrorEqualsRegistry(h, ['projects']);
    const removedRow = h.ctx.database.sqlite
      .prepare('SELECT _removed_at FROM projects WHERE projectID = ?')
      .get(second) as {
      _removed_at: string | null;
    };
    expect(removedRow._removed_at).not.toBeNull();
    const feed = h.ctx.database.sqlite
      .prepare('SELECT record_id, kind FROM changes WHERE seq > 20 ORDER BY seq')
      .all();
    expect(feed).toEqual(
      expect.arrayContaining([
        { record_id: first, kind: 'update' },
        { record_id: String(added.projectID), kind: 'insert' },
        { record_id: second, kind: 'remove' },
      ]),
    );
    expect(feed).toHaveLength(3);
    // It returns: _removed_at cleared, fed as an insert.
    reg.add('projects', { ...reg.get('projects', first!)!, projectID: Number(second) });
    const back = await sync('projects');
    expect(back.counts.inserted).toBe(1);
    expectMirrorEqualsRegistry(h, ['projects']);
  });
});
