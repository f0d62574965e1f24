import { noopMetrics } from '../common/metrics.js';
import type { Config } from '../config/config.js';
import { requireSettings } from '../config/configNeeds.js';
import { syncLogger } from './logAboveBars.js';
import { parseTargets, runSyncCommand } from './sync.js';
import { withStores } from './withStores.js';

/**
 * `vcu-sync sync [resources...] [--full]`: one sync, then exit; 0 only if every resource succeeded.
 * It serves no /metrics, so it counts into no-op metrics (prom-client is never loaded).
 */
export async function runSyncCli(config: Config, resources: string[], full: boolean): Promise<number> {
  requireSettings(config, 'sync');
  // A bad resource name is refused before anything is opened.
  const targets = parseTargets(resources);
  const { log, aboveBars } = await syncLogger(config);
  return withStores(
    config,
    (ctx, stores) =>
      runSyncCommand(ctx, {
        targets,
        full,
        tty: process.stderr.isTTY === true,
        backend: stores.mirrorBackend(),
        aboveBars,
      }),
    { create: true, metrics: noopMetrics(), log },
  );
}
