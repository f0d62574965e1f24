import type { Config } from '../config.js';
import { createPgAppContext } from '../context.js';
import { openPostgres } from '../db/pg.js';
import { pgApplicationName } from '../db/pgConfig.js';
import { errorMessage } from '../errors.js';
import { instanceName } from '../health/identity.js';
import { noopMetrics } from '../metrics.js';
import { pgBackend } from '../mirror/postgres.js';
import { syncLogger } from './logAboveBars.js';
import { parseTargets, runSyncCommand } from './sync.js';

/**
 * `vcu-sync sync` with `database.url` set: the lists and custody run on the PostgreSQL mirror,
 * migrated first as SQLite's is (custody's ids come from the configuration and the outbox there);
 * no SQLite file is opened or created. Loaded only on that path, so `pg` stays out of a SQLite sync.
 */

/** `vcu-sync sync` on PostgreSQL at `url`: the exit code as on SQLite (0 only if every run succeeded). */
export async function runPgSyncCli(
  config: Config,
  url: string,
  resources: string[],
  full: boolean,
): Promise<number> {
  // A bad resource name is refused before anything is opened.
  const targets = parseTargets(resources);
  const { log, aboveBars } = await syncLogger(config);
  // One connection holds the run's lock, the others carry its batches (one at a time).
  const database = await openPostgres(url, {
    applicationName: pgApplicationName(instanceName(config)),
    max: 4,
    onConnectionLost: (err) =>
      log.warn(
        { event: 'db.connection.lost', error: errorMessage(err) },
        'a PostgreSQL connection failed; the next query opens a new one',
      ),
  });
  try {
    const ctx = createPgAppContext(config, log, { metrics: noopMetrics() });
    return await runSyncCommand(ctx, {
      targets,
      full,
      tty: process.stderr.isTTY === true,
      backend: pgBackend(database.pool),
      aboveBars,
    });
  } finally {
    await database.close();
  }
}
