import { existsSync } from 'node:fs';
import type { Config } from '../config.js';
import { type AppContext, closeAppContext, createAppContext } from '../context.js';
import { refuseSqliteUnderPostgres } from '../db/pgConfig.js';
import { UserError } from '../errors.js';
import { createLogger, type Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { configuredDeliveriesSink } from '../subscribers/subscribers.js';

/** What `vcu-sync status`, `outbox` and `db backup` say when the database is not there. */
export function missingDatabaseMessage(file: string): string {
  return `database ${file} does not exist: the daemon has never run with this configuration`;
}

/**
 * Only `run`, `sync`, `enqueue` and `db migrate` may create the database; a command that reads
 * calls this first, so a mistyped path is an error instead of a new empty database.
 */
export function requireDatabase(config: Config): void {
  if (!existsSync(config.database.path)) {
    throw new UserError(
      `${missingDatabaseMessage(config.database.path)} (check database.path / VCU_SYNC_DB)`,
    );
  }
}

/** Options of {@link withContext}. */
export interface WithContextOptions {
  /** Create (and migrate) the database when it does not exist (default: false: it must exist). */
  create?: boolean;
  /** The metrics to count into (default: a prom-client set, as the daemon has). */
  metrics?: Metrics;
  /** The logger (default: the level configured, on stderr). */
  log?: Logger;
}

/**
 * Runs a one-shot command with an open context, closing it afterwards whatever happens.
 * Logs go to stderr so that what a command prints on stdout stays data.
 */
export async function withContext<T>(
  config: Config,
  fn: (ctx: AppContext) => Promise<T>,
  options: WithContextOptions = {},
): Promise<T> {
  refuseSqliteUnderPostgres(config);
  if (!options.create) requireDatabase(config);
  const log = options.log ?? createLogger({ level: config.log.level, fd: 2 });
  const ctx = createAppContext(config, log, {
    metrics: options.metrics,
    // A cancel or retry from the CLI is pushed to the subscribers as the daemon's would be.
    onStateChange: configuredDeliveriesSink(config),
  });
  try {
    return await fn(ctx);
  } finally {
    closeAppContext(ctx);
  }
}
