/**
 * A dispatcher in a process of its own, for the crash test: builds the context from the
 * environment (VCU_SYNC_DB, VCU_SYNC_OPERATOR_URL, VCU_SYNC_API_KEY, and VCU_SYNC_TEST_OVERRIDES
 * as JSON config overrides) and runs until SIGTERM. Logs JSON lines on stdout.
 */

import { openSqliteContext } from '../../src/app/sqliteStores.js';
import { createLogger } from '../../src/common/log.js';
import { loadConfig } from '../../src/config/config.js';
import { createDispatcherComponent } from '../../src/outbox/dispatcher.js';
import { sqliteDispatcher } from './fixtures.js';

const overrides = JSON.parse(process.env.VCU_SYNC_TEST_OVERRIDES ?? '{}') as Record<string, unknown>;
const config = loadConfig({ env: process.env, overrides });
const log = createLogger({ level: 'info', pretty: false });
const ctx = openSqliteContext(config, log);
const component = createDispatcherComponent(ctx, sqliteDispatcher(ctx));
await component.start();
log.info({ event: 'child.ready' }, 'dispatcher child ready');
process.once('SIGTERM', () => {
  void component.stop().then(() => {
    ctx.database.close();
    log.flush();
    process.exit(0);
  });
});
