import type { Config } from '../config.js';
import { runEnqueueCommand } from './enqueue.js';
import { runOutboxCommand } from './outbox.js';
import { withContext } from './withContext.js';

/** `vcu-sync enqueue FILE|-`. */
export function runEnqueueCli(config: Config, file: string): Promise<number> {
  return withContext(config, (ctx) => runEnqueueCommand(ctx, file), { create: true });
}

/** `vcu-sync outbox list|show|retry|cancel`: the database must exist already. */
export function runOutboxCli(
  config: Config,
  action: string,
  ref: string | undefined,
  options: { json: boolean; state: string | undefined },
): Promise<number> {
  return withContext(config, (ctx) => runOutboxCommand(ctx, action, ref, options));
}
