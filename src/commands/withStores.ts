import { openCommandStores } from '../app/openStores.js';
import type { CommandStoreOptions, Stores } from '../app/stores.js';
import { createLogger, type Logger } from '../common/log.js';
import type { Config } from '../config/config.js';
import type { AppContext } from '../context.js';

/** Options of {@link withStores}. */
export interface WithStoresOptions extends CommandStoreOptions {
  /** The logger (default: the level configured, on stderr). */
  log?: Logger;
}

/**
 * Runs a one-shot command with a context and the configured database's stores, closing them
 * afterwards whatever happens. Logs go to stderr so that what a command prints on stdout stays data.
 */
export async function withStores<T>(
  config: Config,
  fn: (ctx: AppContext, stores: Stores) => Promise<T>,
  options: WithStoresOptions = {},
): Promise<T> {
  const log = options.log ?? createLogger({ level: config.log.level, fd: 2 });
  const { ctx, stores } = await openCommandStores(config, log, options);
  try {
    return await fn(ctx, stores);
  } finally {
    await stores.close();
  }
}
