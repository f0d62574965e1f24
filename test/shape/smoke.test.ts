import { afterEach, expect, it } from 'vitest';
import { runSync } from '../../src/mirror/syncRun.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { type Harness, harness, noSleep } from '../mirror/harness.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

it('smoke', async () => {
  h = await harness({ projects: 30 }, { 'sync.page_size': 10 });
  const go = () =>
    runSync(h!.ctx, 'projects', { backend: sqliteBackend(h!.ctx.database.sqlite), sleep: noSleep });
  expect((await go()).status).toBe('succeeded');
  const db = h.ctx.database.sqlite;
  console.log(
    db
      .prepare(
        'SELECT field, types, admitted, enum_values, key_formats, present, nulls, records FROM schema_fields',
      )
      .all()
      .slice(0, 40),
  );
  const ids = [...h.sim.registry.snapshot('projects').keys()];
  h.sim.registry.change('projects', ids[0]!, { newField: 'x' });
  h.sim.registry.change('projects', ids[1]!, { projectStatus: 'Suspended' });
  h.sim.registry.change('projects', ids[2]!, { totalEstimatedUnits: '12' });
  const second = await go();
  console.log(second);
  console.log(db.prepare('SELECT * FROM schema_changes').all());
  console.log(db.prepare('SELECT resource, record_id, reason, position, resolved_at FROM quarantine').all());
  console.log(db.prepare("SELECT * FROM changes WHERE resource = 'schema_changes'").all());
  const third = await go();
  console.log(third.counts, db.prepare('SELECT id, count, last_seen_at FROM schema_changes').all());
  console.log(db.prepare('SELECT count(*) n FROM quarantine').get());
});
