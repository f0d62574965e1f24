import { existsSync } from 'node:fs';
import type { Config } from '../config.js';
import { NO_FAULTS } from '../db/faults.js';
import { openDatabase } from '../db/open.js';
import { EXIT_CONFIG, errorMessage, UserError } from '../errors.js';
import { formatHealth } from '../health/format.js';
import { instanceName } from '../health/identity.js';
import type { HealthReads } from '../health/snapshot.js';
import { sqliteHealthReads } from '../health/sqliteHealth.js';
import { type Health, readHealth } from '../status.js';
import { missingDatabaseMessage } from './withContext.js';

/** `vcu-sync status [--json]`: exit 0 ok, 1 warning, 2 critical (Nagios). */
export async function runStatusCommand(config: Config, options: { json: boolean }): Promise<number> {
  const print = (health: Health, now: number) => {
    process.stdout.write(options.json ? `${JSON.stringify(health, null, 2)}\n` : formatHealth(health, now));
    return health.exitCode;
  };
  if (config.database.url) return runOnPostgres(config, config.database.url, print);
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
    return print(await readHealth(sqliteHealthReads(database.sqlite), config, now), now);
  } finally {
    database.close();
  }
}

/**
 * The same status from PostgreSQL: no migration (status only reads), one connection. A server that
 * cannot be reached is a critical `database-unreachable` problem (exit 2); one that refuses the
 * connection for another reason (a wrong password) is `database-unreadable`.
 */
async function runOnPostgres(
  config: Config,
  url: string,
  print: (health: Health, now: number) => number,
): Promise<number> {
  // Loaded here so the SQLite commands never load pg.
  const { openPostgres } = await import('../db/pg.js');
  const { pgApplicationName } = await import('../db/pgConfig.js');
  const { pgHealthReads } = await import('../health/postgresHealth.js');
  const { unreachableReason } = await import('../db/pgAvailability.js');
  const { pgReadAdvice } = await import('../health/pgAdvice.js');
  const now = Date.now();
  let database: Awaited<ReturnType<typeof openPostgres>>;
  try {
    database = await openPostgres(url, {
      applicationName: pgApplicationName(instanceName(config)),
      migrate: false,
      max: 1,
    });
  } catch (err) {
    // A configuration it cannot read stays a configuration error (exit 78), not a status.
    if (err instanceof UserError && err.exitCode === EXIT_CONFIG) throw err;
    // openPostgres's errors name host:port/database only, never the password. A server that is
    // not there is `database-unreachable`; one that refuses us (a wrong password) is unreadable.
    const cause = err instanceof Error && err.cause !== undefined ? err.cause : err;
    const unreachable: HealthReads = {
      snapshot: () => Promise.reject(err),
      daemonStartedAt: async () => null,
      // The message names host:port/database (openPostgres's words), pg's alone would not.
      readFailed: () =>
        unreachableReason(cause) === null
          ? { ...NO_FAULTS, readError: errorMessage(err), readAction: pgReadAdvice(err) }
          : { ...NO_FAULTS, unreachable: { reason: errorMessage(err), since: null } },
      series: () => Promise.reject(err),
    };
    return print(await readHealth(unreachable, config, now), now);
  }
  try {
    return print(await readHealth(pgHealthReads(database.pool), config, now), now);
  } finally {
    await database.close();
  }
}
