import type { Config } from '../config/config.js';
import { runEnqueueCommand } from './enqueue.js';
import { runOutboxCommand } from './outbox.js';
import { withStores } from './withStores.js';

/** `vcu-sync enqueue FILE|-`: the database is created when it does not exist. */
export function runEnqueueCli(config: Config, file: string): Promise<number> {
  return withStores(config, (_ctx, stores) => runEnqueueCommand(stores.outbox, file), {
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
  return withStores(config, (_ctx, stores) => runOutboxCommand(stores.outbox, action, ref, options));
}
