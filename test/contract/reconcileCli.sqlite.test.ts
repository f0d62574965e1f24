import path from 'node:path';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { tempDir, testContext } from '../helpers/context.js';
import { reconcileCliCases } from './reconcileCli.cases.js';
import { writeBook } from './reconciliationBook.js';

/** `vcu-sync reconcile`'s contract on a SQLite file holding the book, as child processes: no PostgreSQL needed. */

reconcileCliCases('SQLite', async () => {
  const ctx = testContext();
  const home = tempDir('vcu-sync-reconcile-cli-');
  const store = commitQueueFor(ctx.database.sqlite);
  await writeBook(store, Date.now());
  return {
    side: {
      env: { HOME: home.dir, VCU_SYNC_DB: ctx.config.database.path },
      store,
      neverRan: { HOME: home.dir, VCU_SYNC_DB: path.join(home.dir, 'typo.db') },
    },
    close: async () => {
      ctx.dispose();
      home.cleanup();
    },
  };
});
