import path from 'node:path';
import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { openDatabase, type Sqlite } from '../../src/sqlite/open.js';
import { deliveriesPrune } from '../../src/subscribers/prune.js';
import { tempDir } from '../helpers/context.js';
import { columns, deliveriesPruneCases, type PruneHarness } from './deliveriesPrune.cases.js';

/** The deliveries prune's contract on SQLite, a temp file per case: no PostgreSQL needed. */

function sqliteHarness(sqlite: Sqlite): PruneHarness {
  const insert = sqlite.prepare(
    `INSERT INTO deliveries (subscriber, event_type, ref, webhook_id, body, state, attempts, next_attempt_at,
       created_at, updated_at, delivered_at, dead_at, lease_owner)
     VALUES (?, 'operation.accepted', 'ref', ?, '{}', ?, 1, ?, ?, ?, ?, ?, ?)`,
  );
  return {
    insert: async (rows) => {
      sqlite.transaction(() => {
        for (const r of rows) {
          const [sub, id, state, created, delivered, dead, owner] = columns(r);
          insert.run(sub, id, state, created, created, created, delivered, dead, owner);
        }
      })();
    },
    left: async () =>
      sqlite.prepare('SELECT subscriber, state FROM deliveries ORDER BY id').all() as Array<{
        subscriber: string;
        state: string;
      }>,
    exec: async (sql) => {
      sqlite.exec(sql);
    },
  };
}

deliveriesPruneCases('sqlite', async () => {
  const { dir, cleanup } = tempDir();
  const database = openDatabase(path.join(dir, 'prune.db'));
  return {
    h: sqliteHarness(database.sqlite),
    pruneDeliveries: deliveriesPrune(commitQueueFor(database.sqlite)),
    close: async () => {
      database.close();
      cleanup();
    },
  };
});
