import type { Config } from '../config.js';
import { requireSettings } from '../configNeeds.js';
import { runSyncCommand } from './sync.js';
import { withContext } from './withContext.js';

/** `vcu-sync sync [resources...] [--full]`: one sync, then exit; 0 only if every resource succeeded. */
export function runSyncCli(config: Config, resources: string[], full: boolean): Promise<number> {
  requireSettings(config, 'sync');
  return withContext(
    config,
    (ctx) => runSyncCommand(ctx, { targets: resources, full, tty: process.stderr.isTTY === true }),
    { create: true },
  );
}
