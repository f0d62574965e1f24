import { writeFileSync } from 'node:fs';
import path from 'node:path';

/** A test webhook secret: whsec_ + base64 of 32 bytes. */
export const BENCH_WEBHOOK_SECRET = `whsec_${Buffer.from('bench-webhook-secret-0123456789ab').toString('base64')}`;
/** The internal API token of the daemons started by the benchmarks. */
export const BENCH_API_TOKEN = 'bench-api-token-0123456789';

/** Writes a TOML config for a child `vcu-sync` and returns its path. */
export function writeConfig(dir: string, name: string, toml: string): string {
  const file = path.join(dir, `${name}.toml`);
  writeFileSync(file, toml);
  return file;
}

/** The environment of a child daemon: its database, listeners, operator and secrets. */
export function daemonEnv(options: {
  db: string;
  operatorUrl: string;
  apiPort: number;
  webhookPort: number;
}): NodeJS.ProcessEnv {
  return {
    VCU_SYNC_DB: options.db,
    VCU_SYNC_OPERATOR_URL: options.operatorUrl,
    VCU_SYNC_API_KEY: 'sim-api-key',
    VCU_SYNC_MARKETPLACE_ID: 'mkt-bench',
    VCU_SYNC_LISTEN: `127.0.0.1:${options.apiPort}`,
    VCU_SYNC_API_TOKEN: BENCH_API_TOKEN,
    VCU_SYNC_WEBHOOK_LISTEN: `127.0.0.1:${options.webhookPort}`,
    VCU_SYNC_WEBHOOK_SECRET: BENCH_WEBHOOK_SECRET,
    VCU_SYNC_LOG_LEVEL: 'warn',
  };
}

/** BENCH_RECONCILE=0 runs the benches' daemons with `reconcile.enabled = false` (to measure its share). */
export const RECONCILE_OFF = process.env.BENCH_RECONCILE === '0';
/** What a daemon's config adds for {@link RECONCILE_OFF}: nothing, or the `[reconcile]` table turning it off. */
export const RECONCILE_TOML = RECONCILE_OFF ? '[reconcile]\nenabled = false\n' : '';

/** A daemon config that never syncs on its own (start-up and schedules off). */
export const QUIET_DAEMON_TOML = `
[sync]
on_startup = false
thread = ${process.env.BENCH_SYNC_THREAD === '0' ? 'false' : 'true'}
[sync.schedule]
projects = "off"
issuances = "off"
units = "off"
custody = "off"
`;
