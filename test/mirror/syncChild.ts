/**
 * A `vcu-sync sync` as a child process for the crash test: the context from the environment
 * (VCU_SYNC_DB, VCU_SYNC_OPERATOR_URL, VCU_SYNC_API_KEY, ...), the targets from argv.
 */

import { openSqliteContext } from '../../src/app/sqliteStores.js';
import { runSyncCommand } from '../../src/commands/sync.js';
import { createLogger } from '../../src/common/log.js';
import { loadConfig } from '../../src/config/config.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';

const config = loadConfig({
  overrides: {
    'operator.rate_per_second': 100_000,
    'sync.page_size': Number(process.env.TEST_PAGE_SIZE ?? 20),
    'sync.units_overlap': 10,
  },
});
const ctx = openSqliteContext(config, createLogger({ level: config.log.level, pretty: false }));
const code = await runSyncCommand(ctx, {
  backend: sqliteBackend(ctx.database.sqlite),
  targets: process.argv.slice(2),
  tty: false,
});
ctx.operator().close();
ctx.database.close();
process.exit(code);
