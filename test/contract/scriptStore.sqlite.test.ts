import path from 'node:path';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { openDatabase } from '../../src/sqlite/open.js';
import { tempDir } from '../helpers/context.js';
import { scriptStoreCases } from './scriptStore.cases.js';

/** The script store's contract on SQLite: a temp file per case, no PostgreSQL needed. */

scriptStoreCases('sqlite', async () => {
  const { dir, cleanup } = tempDir();
  const database = openDatabase(path.join(dir, 'scripts.db'));
  const { sqlite } = database;
  return {
    store: commitQueueFor(sqlite),
    feed: async () =>
      (
        sqlite
          .prepare("SELECT resource || ' ' || record_id || ' ' || kind AS v FROM changes ORDER BY seq")
          .all() as Array<{
          v: string;
        }>
      ).map((r) => r.v),
    close: async () => {
      database.close();
      cleanup();
    },
  };
});
