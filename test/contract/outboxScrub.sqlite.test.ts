import path from 'node:path';
import { openDatabase } from '../../src/sqlite/open.js';
import { SqliteOperationsStore, sqliteOutboxHooks } from '../../src/sqlite/operationsStore.js';
import { tempDir } from '../helpers/context.js';
import {
  ATTEMPTS,
  EVENTS,
  outboxScrubCases,
  ROWS,
  type ScrubHarness,
  type Texts,
} from './outboxScrub.cases.js';

/** The scrub's contract on SQLite, a temp file per case: no PostgreSQL needed. */

function sqliteHarness(): ScrubHarness {
  const { dir, cleanup } = tempDir();
  const database = openDatabase(path.join(dir, 'scrub.db'));
  const { sqlite } = database;
  const all = <T>(sql: string) => sqlite.prepare(sql).all() as T[];
  return {
    hooks: sqliteOutboxHooks(sqlite),
    ops: new SqliteOperationsStore(sqlite),
    run: async (sql, params) => {
      const named = Object.fromEntries(params.map((v, i) => [`p${i + 1}`, v]));
      sqlite.prepare(sql.replace(/\$(\d+)/g, '@p$1')).run(named);
    },
    rows: async () => all<Texts>(ROWS),
    attempts: async () => all(ATTEMPTS),
    events: async () => all(EVENTS),
    close: async () => {
      database.close();
      cleanup();
    },
  };
}

outboxScrubCases('sqlite', async () => sqliteHarness());
