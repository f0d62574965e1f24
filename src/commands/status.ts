import { existsSync } from 'node:fs';
import type { Config } from '../config.js';
import { openDatabase } from '../db/open.js';
import { refuseUntilPostgresStore } from '../db/pgConfig.js';
import { formatHealth } from '../health/format.js';
import { getHealth } from '../status.js';
import { missingDatabaseMessage } from './withContext.js';

/** `vcu-sync status [--json]`: exit 0 ok, 1 warning, 2 critical (Nagios). */
export async function runStatusCommand(config: Config, options: { json: boolean }): Promise<number> {
  refuseUntilPostgresStore(config);
  if (!existsSync(config.database.path)) {
    const message = missingDatabaseMessage(config.database.path);
    if (options.json) {
      process.stdout.write(
        `${JSON.stringify({ status: 'critical', exitCode: 2, problems: [{ severity: 'critical', code: 'no-database', message, action: 'check database.path / VCU_SYNC_DB, then start the daemon' }] }, null, 2)}\n`,
      );
    } else {
      process.stdout.write(`vcu-sync CRITICAL: ${message}\n`);
    }
    return 2;
  }
  const database = openDatabase(config.database.path, { readonly: true, migrate: false });
  try {
    const now = Date.now();
    const health = getHealth(database.sqlite, config, now);
    process.stdout.write(options.json ? `${JSON.stringify(health, null, 2)}\n` : formatHealth(health, now));
    return health.exitCode;
  } finally {
    database.close();
  }
}
