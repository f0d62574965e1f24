import { closeAppContext, createAppContext } from '../appContext.js';
import type { Config } from '../config.js';
import type { AppContext } from '../context.js';
import { createLogger } from '../log.js';

/**
 * Runs a one-shot command with an open context, closing it afterwards whatever happens.
 * Logs go to stderr so that what a command prints on stdout stays data.
 */
export async function withContext<T>(config: Config, fn: (ctx: AppContext) => Promise<T>): Promise<T> {
  const log = createLogger({ level: config.log.level, fd: 2 });
  const ctx = createAppContext(config, log);
  try {
    return await fn(ctx);
  } finally {
    closeAppContext(ctx);
  }
}
