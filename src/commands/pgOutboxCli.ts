import type pg from 'pg';
import type { Config } from '../config.js';
import { type AppContext, createPgAppContext } from '../context.js';
import { migratePostgres, openPostgres } from '../db/pg.js';
import { pgApplicationName } from '../db/pgConfig.js';
import { errorMessage, UserError } from '../errors.js';
import { instanceName } from '../health/identity.js';
import { createLogger } from '../log.js';
import { noopMetrics } from '../metrics.js';
import type { OutboxAccess } from '../outbox/access.js';
import { pgOutbox } from '../outbox/pgAccess.js';
import { deliveriesSink } from '../subscribers/enqueue.js';
import { subscribersFromConfig } from '../subscribers/subscribers.js';

/**
 * `vcu-sync enqueue`, `outbox` and `deliveries` with `database.url` set: the same commands on
 * PostgreSQL, the schema brought up to date first as on SQLite; no SQLite file is opened or
 * created. As on SQLite only `enqueue` may start from nothing: the others on a database the daemon
 * has never run on say so (exit 1) instead of creating the tables. Loaded only on that path, so
 * `pg` stays out of a SQLite run.
 */
export async function withPgStore<T>(
  config: Config,
  url: string,
  fn: (ctx: AppContext, pool: pg.Pool) => Promise<T>,
  options: { create: boolean },
): Promise<T> {
  const log = createLogger({ level: config.log.level, fd: 2 });
  const database = await openPostgres(url, {
    applicationName: pgApplicationName(instanceName(config)),
    max: 2,
    migrate: false,
    onConnectionLost: (err) =>
      log.warn(
        { event: 'db.connection.lost', error: errorMessage(err) },
        'a PostgreSQL connection failed; the next query opens a new one',
      ),
  });
  try {
    if (!options.create && !(await hasOutbox(database.pool))) {
      throw new UserError(
        `database ${database.label} has no vcu-sync tables: the daemon has never run with this configuration (check database.url / VCU_SYNC_DATABASE_URL)`,
      );
    }
    await migratePostgres(database.pool, database.label);
    const ctx = createPgAppContext(config, log, { metrics: noopMetrics() });
    return await fn(ctx, database.pool);
  } finally {
    await database.close();
  }
}

/** {@link withPgStore} with the PostgreSQL outbox (`enqueue`, `outbox`). */
export function withPgOutbox<T>(
  config: Config,
  url: string,
  fn: (ctx: AppContext, outbox: OutboxAccess) => Promise<T>,
  options: { create: boolean },
): Promise<T> {
  // The lease owner is never claimed under: this process only queues and steers.
  return withPgStore(
    config,
    url,
    (ctx, pool) =>
      fn(
        ctx,
        pgOutbox(ctx, pool, {
          leaseOwner: `cli:${process.pid}`,
          // A cancel or retry from the CLI is pushed to the subscribers as the daemon's would be.
          onStateChange: deliveriesSink(subscribersFromConfig(ctx.config)),
        }),
      ),
    options,
  );
}

async function hasOutbox(pool: pg.Pool): Promise<boolean> {
  const { rows } = await pool.query<{ found: boolean }>(
    `SELECT to_regclass('public.outbox') IS NOT NULL AS found`,
  );
  return rows[0]?.found === true;
}
