import { readdirSync } from 'node:fs';
import path from 'node:path';
import { expect, inject } from 'vitest';
import { openPostgres } from '../../src/postgres/open.js';
import { postgresScriptStore } from '../../src/postgres/scripts.js';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { tempDir, testContext } from '../helpers/context.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { reconcileCliCases } from './reconcileCli.cases.js';
import { writeBook } from './reconciliationBook.js';

/**
 * `vcu-sync reconcile`'s contract on PostgreSQL (database.url set; a database collated for people,
 * ICU `en-US`), each command also run on a SQLite file holding the same book, which must print the
 * same. No SQLite file appears on PostgreSQL's side and the password never shows.
 */

const cluster = inject('postgres');

reconcileCliCases('PostgreSQL', async () => {
  const ctx = testContext();
  /** database.path of the PostgreSQL runs: it must stay empty. */
  const pgDir = tempDir('vcu-sync-pgreconcile-');
  const home = tempDir('vcu-sync-reconcile-cli-');
  const database = await createTestDatabase(cluster, { icuLocale: 'en-US' });
  const fresh = await createTestDatabase(cluster);
  const pg = await openPostgres(database.url, { max: 2 });
  const onPg = postgresScriptStore(pg.pool);
  const onSqlite = commitQueueFor(ctx.database.sqlite);
  const now = Date.now();
  await writeBook(onPg, now);
  await writeBook(onSqlite, now);
  const pgEnv = (url: string) => ({
    HOME: home.dir,
    VCU_SYNC_DB: path.join(pgDir.dir, 'vcu.db'),
    VCU_SYNC_DATABASE_URL: url,
  });
  return {
    side: {
      env: pgEnv(database.url),
      store: onPg,
      afterRun: (run) => {
        expect(run.stdout + run.said).not.toContain(cluster.password);
        expect(readdirSync(pgDir.dir)).toEqual([]);
      },
      neverRan: pgEnv(fresh.url),
    },
    reference: {
      env: { HOME: home.dir, VCU_SYNC_DB: ctx.config.database.path },
      store: onSqlite,
      neverRan: { HOME: home.dir, VCU_SYNC_DB: path.join(home.dir, 'typo.db') },
    },
    close: async () => {
      await pg.close();
      await database.drop();
      await fresh.drop();
      ctx.dispose();
      pgDir.cleanup();
      home.cleanup();
    },
  };
});
