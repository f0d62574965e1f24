import { hostname } from 'node:os';
import { z } from 'zod';
import { VERSION } from '../common/version.js';
import type { Config } from '../config/config.js';

/**
 * Which vcu-sync this is: what an on-call engineer needs to know before acting on a page, and what
 * tells two instances apart in one Prometheus. Shown by the status page, `GET /status`,
 * `vcu-sync status` and the `vcu_sync_build_info` metric, from this one function.
 */
export const identitySchema = z.object({
  version: z.string().describe('package.json version'),
  instance: z.string().describe('status.instance_name, or the host name'),
  operatorHost: z.string().nullable().describe('host (and port) of operator.url, or null when unset'),
  database: z
    .object({ kind: z.string(), location: z.string() })
    .describe("the store's kind (sqlite, postgres) and its file or host:port/database (never credentials)"),
  startedAt: z
    .string()
    .meta({ format: 'date-time' })
    .nullable()
    .describe('when the daemon serving this started; null when not known (a CLI with no daemon record)'),
  uptimeSeconds: z.number().int().nullable(),
  node: z.string().describe('Node.js version running this process'),
});

export type Identity = z.output<typeof identitySchema>;
/** Which store, and where: each store's factory says (app/), so nothing here names one. */
export type StoreIdentity = Identity['database'];

/** The package version, read once. */
export { VERSION } from '../common/version.js';

/** The instance name: configured, else the host name. */
export function instanceName(config: Pick<Config, 'status'>): string {
  return config.status.instance_name || hostname();
}

/** The identity of this configuration on `store`, as of `now`, for a daemon started at `startedAt`. */
export function identityOf(
  config: Pick<Config, 'status' | 'operator'>,
  store: StoreIdentity,
  startedAt: string | null,
  now: number,
): Identity {
  const url = config.operator.url;
  return {
    version: VERSION,
    instance: instanceName(config),
    operatorHost: url && URL.canParse(url) ? new URL(url).host : null,
    database: { kind: store.kind, location: store.location },
    startedAt,
    uptimeSeconds: startedAt ? Math.max(0, Math.round((now - Date.parse(startedAt)) / 1000)) : null,
    node: process.version,
  };
}

/**
 * One line for people: "vcu-sync 0.1.0 on mkt-a (operator registry.example, sqlite /var/lib/...), up 3h".
 * Read from another process, uptime is unknown: a store with one daemon says whether it runs, a
 * store shared by replicas (given its `replicas`) how many do.
 */
export function identityLine(
  id: Identity,
  formatSeconds: (ms: number) => string,
  replicas?: ReadonlyArray<{ alive: boolean }>,
): string {
  const up =
    id.uptimeSeconds !== null
      ? `up ${formatSeconds(id.uptimeSeconds * 1000)}`
      : replicas
        ? replicasRunning(replicas.filter((r) => r.alive).length)
        : 'daemon not running';
  return `vcu-sync ${id.version} on ${id.instance} (operator ${id.operatorHost ?? 'not configured'}, ${id.database.kind} ${id.database.location}), ${up}`;
}

/** Replicas share the store, no one daemon: as many as hold their liveness lock are running. */
function replicasRunning(alive: number): string {
  return alive === 0 ? 'no replica running' : `${alive} replica${alive === 1 ? '' : 's'} running`;
}
