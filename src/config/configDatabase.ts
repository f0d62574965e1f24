import { z } from 'zod';
import { nonNegativeInt, positiveInt } from './configPrimitives.js';

/** `[database]`: which store (SQLite's file or a PostgreSQL URL) and how it waits, and its secrets. */

/** libpq's `sslmode` values; pg alone reads some of them differently, src/postgres/connection.ts maps them as libpq does. */
export const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'] as const;

/** A libpq connection URL; its messages never quote the value, which holds a password. */
const databaseUrl = z.string().superRefine((value, ctx) => {
  const url = URL.canParse(value) ? new URL(value) : undefined;
  if (!url || !['postgres:', 'postgresql:'].includes(url.protocol)) {
    ctx.addIssue({ code: 'custom', message: 'expected a postgres:// or postgresql:// URL' });
    return;
  }
  const sslmode = url.searchParams.get('sslmode');
  if (sslmode !== null && !(SSL_MODES as readonly string[]).includes(sslmode)) {
    ctx.addIssue({ code: 'custom', message: `sslmode must be one of ${SSL_MODES.join(', ')}` });
  }
});

export const databaseSchema = z.strictObject({
  /** PostgreSQL URL `postgres://user:pass@host:port/db` (libpq, `sslmode` honoured); when set, PostgreSQL is the store and `path` is ignored. Prefer VCU_SYNC_DATABASE_URL_FILE or the `database-url` credential (default: none, SQLite at database.path). */
  url: databaseUrl.optional(),
  /** SQLite file (default: "$STATE_DIRECTORY/vcu-sync.db", else "../vcu-sync.db"). */
  path: z.string().min(1).optional(),
  /** SQLite `synchronous`: `full` survives power loss, `normal` only process crashes (default: "full"). */
  synchronous: z.enum(['full', 'normal']).default('full'),
  /** How long a one-shot command (sync, enqueue, outbox, db) waits for another process's lock, in milliseconds (default: 5000). */
  busy_timeout_ms: positiveInt.default(5_000),
  /** How long the daemon blocks its event loop waiting for another process's lock before it retries later or answers 503, in milliseconds (default: 50). */
  daemon_busy_timeout_ms: positiveInt.max(1_000).default(50),
  /** At start-up the daemon runs `PRAGMA quick_check` before serving on a file up to this size; larger files are checked in the background, in MiB (default: 256). */
  startup_check_max_mib: nonNegativeInt.default(256),
  /** While a worker thread checkpoints the WAL, it checkpoints it in full (holding writers off for a moment) once it passes this size, in MiB (default: 64). */
  wal_bound_mib: positiveInt.max(4_096).default(64),
});

type DatabaseSection = z.output<typeof databaseSchema>;

/**
 * What of a PostgreSQL URL is secret: the URL itself, and its password (in the userinfo or a
 * `password=` parameter) both as written (percent-encoded) and as sent.
 */
function databaseUrlSecrets(url: string): string[] {
  if (!URL.canParse(url)) return [url];
  const parsed = new URL(url);
  const passwords = [parsed.password, parsed.searchParams.get('password') ?? ''].filter(Boolean);
  const decoded = passwords.map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      return p;
    }
  });
  return [...new Set([url, ...passwords, ...decoded])];
}

/** The URL with its password (userinfo or `password=` parameter) replaced by `********`. */
function maskDatabaseUrl(url: string): string {
  if (!URL.canParse(url)) return '********';
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '********';
  if (parsed.searchParams.has('password')) parsed.searchParams.set('password', '********');
  return parsed.toString();
}

/** The database section's secrets, for the redaction of every log line and error. */
export function databaseSecrets(database: DatabaseSection): string[] {
  return database.url ? databaseUrlSecrets(database.url) : [];
}

/** The database section with the URL's password masked. */
export function maskedDatabase<D extends DatabaseSection>(database: D): D {
  return database.url ? { ...database, url: maskDatabaseUrl(database.url) } : database;
}

/**
 * The database section as `config check` prints it: masked and, with `url` set, without `path`,
 * which is then never used (printing it suggested a file in use).
 */
export function printedDatabase(database: DatabaseSection): Partial<DatabaseSection> {
  const masked = maskedDatabase(database);
  if (!masked.url) return masked;
  const { path: _unused, ...rest } = masked;
  return rest;
}
