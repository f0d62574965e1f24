import type { Config } from '../config.js';
import { requireSettings } from '../configNeeds.js';
import { noopMetrics } from '../metrics.js';
import { syncLogger } from './logAboveBars.js';
import { runSyncCommand } from './sync.js';
import { withContext } from './withContext.js';

/**
 * `vcu-sync sync [resources...] [--full]`: one sync, then exit; 0 only if every resource succeeded.
 * It serves no /metrics, so it counts into no-op metrics (prom-client is never loaded). With
 * `database.url` set it runs on PostgreSQL (./pgSyncCli.ts, loaded only then, and `pg` with it).
 */
export async function runSyncCli(config: Config, resources: string[], full: boolean): Promise<number> {
  requireSettings(config, 'sync');
  if (config.database.url) {
    const { runPgSyncCli } = await import('./pgSyncCli.js');
    return runPgSyncCli(config, config.database.url, resources, full);
  }
  const { log, aboveBars } = await syncLogger(config);
  return withContext(
    config,
    (ctx) => runSyncCommand(ctx, { targets: resources, full, tty: process.stderr.isTTY === true, aboveBars }),
    { create: true, metrics: noopMetrics(), log },
  );
}
