import { afterEach, beforeAll, describe, expect, inject, it } from 'vitest';
import type { MirrorBackend } from '../../src/mirror/backend.js';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { type Harness, harness } from '../mirror/harness.js';
import { mirrorExactnessCases, sync } from './mirrorExactness.cases.js';
import { type MirrorUnderTest, pgMirror } from './mirrorStores.js';

/**
 * The mirror's exactness contract on PostgreSQL, a fresh database per case; then what only
 * PostgreSQL does: each page commits as it is read, and U+0000 (which jsonb cannot hold) is
 * quarantined.
 */

const cluster = inject('postgres');

let database: TestDatabase | undefined;
let store: PgDatabase | undefined;
beforeAll(() => {
  expect(cluster).toBeDefined();
});

/** A fresh database and a pool on it, closed and dropped after the case. */
async function open(): Promise<MirrorUnderTest> {
  database = await createTestDatabase(cluster);
  store = await openPostgres(database.url, { max: 4 });
  return pgMirror(store);
}

mirrorExactnessCases('postgres', open);

let h: Harness | undefined;
afterEach(async () => {
  await store?.close();
  await database?.drop();
  await h?.close();
  h = undefined;
  store = undefined;
  database = undefined;
});

describe('the mirror on postgres only', () => {
  it('each page commits as it is read: pages are not held for a transaction of several', async () => {
    h = await harness({ projects: 230 }, { 'sync.page_size': 50 });
    const m = await open();
    const backend = m.backend!;
    const commits: number[] = [];
    const watched: MirrorBackend = {
      ...backend,
      store(def, now, lease) {
        const inner = backend.store(def, now, lease);
        return {
          ...inner,
          commitBatch(batch) {
            commits.push(batch.records.length);
            return inner.commitBatch(batch);
          },
        };
      },
    };
    // The test's clock is fast: on SQLite these pages would wait to commit together.
    const outcome = await sync(h.ctx, { ...m, backend: watched }, 'projects');
    expect(outcome).toMatchObject({ status: 'succeeded', counts: { inserted: 230 } });
    // One commit per page (after the first, each page starts at the previous page's last record,
    // its anchor, which is not written again); the last, empty page commits the scan's checkpoint.
    expect(commits).toEqual([50, 49, 49, 49, 33, 0]);
  });

  it('a record with U+0000 (which jsonb cannot hold) is quarantined, not a batch failing on every run', async () => {
    h = await harness({ projects: 30 }, { 'sync.page_size': 50 });
    const m = await open();
    const ids = [...h.sim.registry.snapshot('projects').keys()];
    h.sim.registry.change('projects', ids[3]!, { projectDescription: 'before\u0000after' });
    // A literal backslash-u text is ordinary data.
    h.sim.registry.change('projects', ids[4]!, { projectDescription: 'C:\\u0000' });
    const outcome = await sync(h.ctx, m, 'projects');
    expect(outcome).toMatchObject({ status: 'succeeded', counts: { inserted: 29, quarantined: 1 } });
    const rows = await m.query('SELECT record_id, reason FROM quarantine');
    expect(rows).toEqual([{ record_id: ids[3], reason: 'contains U+0000, which PostgreSQL cannot store' }]);
    // Still upstream: a later complete scan does not tombstone it.
    expect(await sync(h.ctx, m, 'projects')).toMatchObject({ status: 'succeeded', counts: { removed: 0 } });
  });
});
