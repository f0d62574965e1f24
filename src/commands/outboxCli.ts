import type { Config } from '../config.js';
import type { AppContext } from '../context.js';
import type { OutboxAccess } from '../outbox/access.js';
import { runEnqueueCommand } from './enqueue.js';
import { runOutboxCommand } from './outbox.js';
import { withContext } from './withContext.js';

/**
 * Runs `fn` on the configured outbox: PostgreSQL's with `database.url` (pgOutboxCli.ts), else
 * SQLite's through `withContext` (the commands' default outbox).
 */
async function withOutbox<T>(
  config: Config,
  fn: (ctx: AppContext, outbox: OutboxAccess | undefined) => Promise<T>,
  options: { create: boolean },
): Promise<T> {
  const url = config.database.url;
  if (url) {
    const { withPgOutbox } = await import('./pgOutboxCli.js');
    return withPgOutbox(config, url, fn, options);
  }
  return withContext(config, (ctx) => fn(ctx, undefined), options);
}

/** `vcu-sync enqueue FILE|-`: the database is created when it does not exist. */
export function runEnqueueCli(config: Config, file: string): Promise<number> {
  return withOutbox(config, (ctx, outbox) => runEnqueueCommand(ctx, file, outbox ? { outbox } : {}), {
    create: true,
  });
}

/** `vcu-sync outbox list|show|retry|cancel`: the database must exist already. */
export function runOutboxCli(
  config: Config,
  action: string,
  ref: string | undefined,
  options: { json: boolean; state: string | undefined; cursor: string | undefined },
): Promise<number> {
  return withOutbox(
    config,
    (ctx, outbox) => runOutboxCommand(ctx, action, ref, outbox ? { ...options, outbox } : options),
    { create: false },
  );
}
