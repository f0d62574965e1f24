import type { ClientConfig } from 'pg';
import { parse, toClientConfig } from 'pg-connection-string';
import { EXIT_CONFIG, UserError } from '../common/errors.js';
import type { Config } from '../config/config.js';
import type { SSL_MODES } from '../config/configDatabase.js';

/**
 * From `database.url` (a libpq URL) to what node-postgres needs, read as libpq reads it. Pure: the
 * URL in, a client config out (it reads the files `sslrootcert`, `sslcert`, `sslkey` name).
 *
 * Where pg alone differs from libpq, libpq wins, because the URL is the one a DBA hands over and
 * tests with psql:
 * - `sslmode` absent means `prefer` (libpq's default), not "no TLS": try TLS without verifying the
 *   certificate, fall back to plain text when the server has no TLS (decided once at open, see
 *   ./pg.ts). `allow` is plain text (libpq tries plain text first). `require` encrypts without
 *   verifying (verifies the chain when `sslrootcert` is given), `verify-ca` the chain,
 *   `verify-full` chain and host name.
 * - `connect_timeout` (seconds) is honoured; absent, it is 10 s rather than libpq's "forever", so a
 *   wrong host fails a start instead of hanging it.
 */

export type SslMode = (typeof SSL_MODES)[number];

/** A connection as the pool opens it, and how to name it in messages without its secrets. */
export interface PgConnection {
  client: ClientConfig;
  sslmode: SslMode;
  /** `host:port/database`: no user, no password, for messages and logs. */
  label: string;
}

/** Options of {@link pgConnection}. */
export interface PgConnectionOptions {
  /** `application_name` unless the URL gives one (default: "vcu-sync"). */
  applicationName?: string;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/** PostgreSQL keeps the first 63 bytes of application_name (NAMEDATALEN - 1). */
const APPLICATION_NAME_BYTES = 63;

/** `vcu-sync/<instance>`: how the daemon's sessions show in `pg_stat_activity`. */
export function pgApplicationName(instance: string): string {
  let name = `vcu-sync/${instance}`;
  while (Buffer.byteLength(name) > APPLICATION_NAME_BYTES) name = name.slice(0, -1);
  return name;
}

function problem(message: string): UserError {
  return new UserError(`database.url: ${message}`, EXIT_CONFIG);
}

/** The client config for `url`, with libpq's reading of sslmode and connect_timeout. */
export function pgConnection(url: string, options: PgConnectionOptions = {}): PgConnection {
  const params = new URL(url).searchParams;
  const sslmode = (params.get('sslmode') ?? 'prefer') as SslMode;
  if (params.has('uselibpqcompat'))
    throw problem('remove uselibpqcompat: the URL is always read as libpq reads it');
  if (sslmode === 'verify-ca' && !params.get('sslrootcert')) {
    throw problem('sslmode=verify-ca needs sslrootcert=FILE (the CA that signed the server certificate)');
  }
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(url, { useLibpqCompat: true });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    // Reading sslrootcert/sslcert/sslkey failed; the path is the operator's, not a secret.
    if (e.code && e.path) throw problem(`cannot read ${e.path} (${e.code})`);
    throw problem('cannot be read as a libpq URL');
  }
  if (sslmode === 'allow' || sslmode === 'disable') parsed.ssl = false;
  // libpq's default is prefer; pg's parser left ssl unset for a URL without sslmode.
  else if (sslmode === 'prefer')
    parsed.ssl = { ...(typeof parsed.ssl === 'object' ? parsed.ssl : {}), rejectUnauthorized: false };
  const client = toClientConfig(parsed);

  const timeoutSeconds = Number(params.get('connect_timeout') ?? '');
  client.connectionTimeoutMillis =
    Number.isFinite(timeoutSeconds) && timeoutSeconds > 0
      ? Math.max(2, timeoutSeconds) * 1000
      : DEFAULT_CONNECT_TIMEOUT_MS;
  if (!params.get('application_name')) client.application_name = options.applicationName ?? 'vcu-sync';
  // Times are timestamptz read back as text: one session time zone makes that text the same on every replica.
  client.options = [parsed.options, '-c TimeZone=UTC'].filter(Boolean).join(' ');

  return { client, sslmode, label: labelOf(client) };
}

/** A connection's `host:port/database`, as logs and status name it: never its user's password. */
export function labelOf(client: Pick<ClientConfig, 'host' | 'port' | 'database' | 'user'>): string {
  return `${client.host || 'localhost'}:${client.port ?? 5432}/${client.database ?? client.user ?? ''}`;
}

/**
 * A guard on the paths that open SQLite at `database.path` (the SQLite context, the daemon's file
 * ownership): with `database.url` set every command runs on PostgreSQL, so reaching one of them is
 * a bug, refused (exit 78) rather than quietly writing a SQLite file nobody reads.
 */
export function refuseSqliteUnderPostgres(config: Pick<Config, 'database'>): void {
  if (!config.database.url) return;
  throw new UserError(
    'database.url is set (PostgreSQL), but this command opened SQLite at database.path; please report it, and unset database.url / VCU_SYNC_DATABASE_URL to use SQLite meanwhile',
    EXIT_CONFIG,
  );
}
