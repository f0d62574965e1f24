import { openStatusReads } from '../app/openStores.js';
import type { Config } from '../config/config.js';
import { formatHealth } from '../health/format.js';
import { type Health, readHealth } from '../health/readHealth.js';

/** `vcu-sync status [--json]`: exit 0 ok, 1 warning, 2 critical (Nagios). */
export async function runStatusCommand(config: Config, options: { json: boolean }): Promise<number> {
  const print = (health: Health, now: number) => {
    process.stdout.write(options.json ? `${JSON.stringify(health, null, 2)}\n` : formatHealth(health, now));
    return health.exitCode;
  };
  const opened = await openStatusReads(config);
  if ('missing' in opened) {
    const message = opened.missing;
    if (options.json) {
      process.stdout.write(
        `${JSON.stringify({ status: 'critical', exitCode: 2, problems: [{ severity: 'critical', code: 'no-database', message, action: 'check database.path / VCU_SYNC_DB, then start the daemon' }] }, null, 2)}\n`,
      );
    } else {
      process.stdout.write(`vcu-sync CRITICAL: ${message}\n`);
    }
    return 2;
  }
  try {
    const now = Date.now();
    return print(await readHealth(opened.reads, config, now), now);
  } finally {
    await opened.close();
  }
}
