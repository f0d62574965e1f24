import { hostname } from 'node:os';
import type { Config } from '../config.js';
import { pgConnection } from '../postgres/connection.js';
import { VERSION } from '../version.js';

/**
 * Which vcu-sync this is: what an on-call engineer needs to know before acting on a page, and what
 * tells two instances apart in one Prometheus. Shown by the status page, `GET /status`,
 * `vcu-sync status` and the `vcu_sync_build_info` metric, from this one function.
 */
export interface Identity {
  /** package.json version. */
  version: string;
  /** `status.instance_name`, or the host name. */
  instance: string;
  /** Host (and port) of `operator.url`, or null when unset. */
  operatorHost: string | null;
  /** SQLite's file, or PostgreSQL's `host:port/database` (never its user or password). */
  database: { kind: 'sqlite' | 'postgres'; location: string };
  /** When the daemon serving this started (ISO); null when not known (a CLI with no daemon record). */
  startedAt: string | null;
  /** Seconds since `startedAt`; null when not known. */
  uptimeSeconds: number | null;
  /** Node.js version running this process. */
  node: string;
}

/** The package version, read once. */
export { VERSION } from '../version.js';

/** The instance name: configured, else the host name. */
export function instanceName(config: Pick<Config, 'status'>): string {
  return config.status.instance_name || hostname();
}

/** The identity of this configuration, as of `now`, for a daemon started at `startedAt`. */
export function identityOf(
  config: Pick<Config, 'status' | 'operator' | 'database'>,
  startedAt: string | null,
  now: number,
): Identity {
  const url = config.operator.url;
  return {
    version: VERSION,
    instance: instanceName(config),
    operatorHost: url && URL.canParse(url) ? new URL(url).host : null,
    database: databaseOf(config),
    startedAt,
    uptimeSeconds: startedAt ? Math.max(0, Math.round((now - Date.parse(startedAt)) / 1000)) : null,
    node: process.version,
  };
}

/** Where the data is: the SQLite file, or the PostgreSQL server and database without credentials. */
function databaseOf(config: Pick<Config, 'database'>): Identity['database'] {
  const { url, path } = config.database;
  if (!url) return { kind: 'sqlite', location: path };
  try {
    return { kind: 'postgres', location: pgConnection(url).label };
  } catch {
    // The URL was checked at load; an unreadable one names nothing rather than leak a part.
    return { kind: 'postgres', location: 'database.url' };
  }
}

/**
 * One line for people: "vcu-sync 0.1.0 on mkt-a (operator registry.example, sqlite /var/lib/...), up 3h".
 * Read from another process, uptime is unknown: SQLite says whether its daemon runs, PostgreSQL
 * (given its `replicas`) how many replicas do.
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

/** PostgreSQL has no one daemon: as many replicas as hold their liveness lock are running. */
function replicasRunning(alive: number): string {
  return alive === 0 ? 'no replica running' : `${alive} replica${alive === 1 ? '' : 's'} running`;
}
