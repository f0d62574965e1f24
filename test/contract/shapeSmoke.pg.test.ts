import { afterEach, expect, inject, it } from 'vitest';
import { runSync } from '../../src/mirror/syncRun.js';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { type Harness, harness, noSleep } from '../mirror/harness.js';
import { pgMirror } from './mirrorStores.js';

const cluster = inject('postgres');
let h: Harness | undefined;
let database: TestDatabase | undefined;
let store: PgDatabase | undefined;
afterEach(async () => {
  await h?.close();
  await store?.close();
  await database?.drop();
});

it('smoke pg', async () => {
  database = await createTestDatabase(cluster);
  store = await openPostgres(database.url, { max: 4 });
  const m = pgMirror(store);
  h = await harness({ projects: 30 }, { 'sync.page_size': 10 });
  const go = () => runSync(h!.ctx, 'projects', { backend: m.backend, sleep: noSleep });
  expect((await go()).status).toBe('succeeded');
  const ids = [...h.sim.registry.snapshot('projects').keys()];
  h.sim.registry.change('projects', ids[0]!, { newField: 'x' });
  h.sim.registry.change('projects', ids[1]!, { projectStatus: 'Suspended' });
  h.sim.registry.change('projects', ids[2]!, { totalEstimatedUnits: '12' });
  const second = await go();
  console.log(second);
  console.log(await m.query('SELECT * FROM schema_changes'));
  console.log(await m.query('SELECT resource, record_id, reason, position, resolved_at FROM quarantine'));
  const third = await go();
  console.log(third.counts, await m.query('SELECT id, count, last_seen_at FROM schema_changes'));
  console.log(await m.query("SELECT count(*) n FROM schema_fields WHERE records = 30"));
});
