import type { Config } from '../config.js';
import type { SyncTarget } from '../context.js';
import { createPgAppContext } from '../context.js';
import { openPostgres } from '../db/pg.js';
import { pgApplicationName } from '../db/pgConfig.js';
import { EXIT_CONFIG, errorMessage, UserError } from '../errors.js';
import { instanceName } from '../health/identity.js';
import { createLogger } from '../log.js';
import { noopMetrics } from '../metrics.js';
import { pgBackend } from '../mirror/pg/pgBackend.js';
import { parseTargets, runSyncCommand } from './sync.js';

/**
 * `vcu-sync sync` with `database.url` set: the lists (projects, issuances, units) run on the
 * PostgreSQL mirror, migrated first as SQLite's is; no SQLite file is opened or created. Loaded
 * only on that path, so `pg` stays out of a SQLite sync.
 *
 * Custody is not on PostgreSQL yet (its ids come from the outbox, still SQLite's): named on the
 * command line it is refused before anything is opened (exit 78); implied by "all" (no resource
 * named) it is skipped with a warning and the lists run, so a plain `vcu-sync sync` works.
 */

/** What a PostgreSQL sync runs, and whether custody was left out of an implied "all" (pure). */
export function pgSyncTargets(names: readonly string[]): { targets: SyncTarget[]; custodySkipped: boolean } {
  const targets = parseTargets(names);
  if (!targets.includes('custody')) return { targets, custodySkipped: false };
  if (names.length > 0) {
    throw new UserError(
      'sync: custody does not sync on PostgreSQL yet (database.url is set); projects, issuances and units do',
      EXIT_CONFIG,
    );
  }
  return { targets: targets.filter((t) => t !== 'custody'), custodySkipped: true };
}

/** What stdout says of custody left out of `vcu-sync sync` on PostgreSQL. */
export const CUSTODY_SKIPPED = 'custody: skipped: the custody sync does not run on PostgreSQL yet';

/** `vcu-sync sync` on PostgreSQL at `url`: the exit code as on SQLite (0 only if every run succeeded). */
export async function runPgSyncCli(
  config: Config,
  url: string,
  resources: string[],
  full: boolean,
): Promise<number> {
  const { targets, custodySkipped } = pgSyncTargets(resources);
  const log = createLogger({ level: config.log.level, fd: 2 });
  if (custodySkipped) {
    log.warn(
      { event: 'sync.run.skipped', resource: 'custody', reason: 'postgres' },
      'custody skipped: the custody sync does not run on PostgreSQL yet',
    );
  }
  // One connection holds the run's lock, the others carry its batches (one at a time).
  const database = await openPostgres(url, {
    applicationName: pgApplicationName(instanceName(config)),
    max: 4,
    onIdleError: (err) =>
      log.warn(
        { event: 'db.connection.lost', error: errorMessage(err) },
        'an idle PostgreSQL connection failed; the next query opens a new one',
      ),
  });
  try {
    const ctx = createPgAppContext(config, log, { metrics: noopMetrics() });
    const code = await runSyncCommand(ctx, {
      targets,
      full,
      tty: process.stderr.isTTY === true,
      backend: pgBackend(database.pool),
    });
    if (custodySkipped) process.stdout.write(`${CUSTODY_SKIPPED}\n`);
    return code;
  } finally {
    await database.close();
  }
}
