import { tempDir } from '../helpers/context.js';
import { cliConfig, outboxCliCases, sqliteCliSide } from './outboxCli.cases.js';

/** The outbox CLI's contract on SQLite, as child processes on a fresh database.path: no PostgreSQL needed. */

outboxCliCases('SQLite', async () => {
  const dbDir = tempDir('vcu-sync-sqoutbox-');
  const aside = tempDir('vcu-sync-sqoutbox-files-');
  return {
    side: sqliteCliSide(dbDir.dir, cliConfig(aside.dir)),
    inputs: aside.dir,
    close: async () => {
      dbDir.cleanup();
      aside.cleanup();
    },
  };
});
