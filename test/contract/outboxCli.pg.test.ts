import { readdirSync } from 'node:fs';
import { expect, inject } from 'vitest';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { tempDir } from '../helpers/context.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { cliConfig, cliEnv, outboxCliCases, sqliteCliSide } from './outboxCli.cases.js';

/**
 * The outbox CLI's contract on PostgreSQL (database.url set, a database of the file's own), each
 * command also run on SQLite, which must print the same. No SQLite file appears on the PostgreSQL
 * side, the password never shows, and `outbox` on a database the daemon never ran on is refused as a
 * missing SQLite file is.
 */

const cluster = inject('postgres');

outboxCliCases('PostgreSQL', async () => {
  const database = await createTestDatabase(cluster);
  /** database.path of the PostgreSQL runs: it must stay empty. */
  const pgDir = tempDir('vcu-sync-pgoutbox-');
  const sqliteDir = tempDir('vcu-sync-sqoutbox-');
  const aside = tempDir('vcu-sync-pgoutbox-files-');
  const config = cliConfig(aside.dir);
  let store: PgDatabase | undefined;
  return {
    side: {
      env: cliEnv(pgDir.dir, config, { VCU_SYNC_DATABASE_URL: database.url }),
      afterRun: (output) => {
        expect(output).not.toContain(cluster.password);
        expect(readdirSync(pgDir.dir)).toEqual([]);
      },
      exec: async (sql) => {
        store ??= await openPostgres(database.url, { migrate: false, max: 1 });
        await store.pool.query(sql);
      },
      neverRan: new RegExp(
        `^vcu-sync: database 127\\.0\\.0\\.1:${cluster.port}/${database.name} has no vcu-sync tables: the daemon has never run with this configuration`,
      ),
    },
    reference: sqliteCliSide(sqliteDir.dir, config),
    inputs: aside.dir,
    close: async () => {
      await store?.close();
      await database.drop();
      pgDir.cleanup();
      sqliteDir.cleanup();
      aside.cleanup();
    },
  };
});
