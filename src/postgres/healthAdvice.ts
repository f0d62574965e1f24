/**
 * What to do when status cannot read PostgreSQL, from the error: a refused login, a missing
 * database, a server that does not answer each have their own fix, and none is SQLite's (a file,
 * its permissions, the kernel log). Pure; never quotes the URL (it holds the password).
 */

/** Where the URL is set, named in every piece of advice. */
const URL_SOURCES =
  'database.url (or VCU_SYNC_DATABASE_URL, VCU_SYNC_DATABASE_URL_FILE, the database-url credential)';

/** The SQLSTATE or errno code of an error or of what it wraps (drizzle and the CLI wrap pg's). */
function codeOf(err: unknown): string | undefined {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The advice for one kind of failure. */
type Advice = { test: (code: string | undefined, message: string) => boolean; action: string };

const ADVICE: readonly Advice[] = [
  {
    test: (c, m) =>
      c === '28P01' ||
      c === '28000' ||
      /password authentication failed|no pg_hba\.conf entry|authentication/i.test(m),
    action: `PostgreSQL refused the login: check the user and password in ${URL_SOURCES}, and that the server's pg_hba.conf lets that user in from this host to that database`,
  },
  {
    test: (c, m) => c === '3D000' || /database ".*" does not exist/.test(m),
    action: `the database named in ${URL_SOURCES} does not exist on that server: create it (createdb) or correct the URL`,
  },
  {
    test: (c, m) => c === '42501' || /permission denied/i.test(m),
    action: `the user in ${URL_SOURCES} may not read the vcu-sync tables: GRANT it SELECT on them, or use the user the replicas use`,
  },
  {
    test: (c, m) => c === '42P01' || /relation ".*" does not exist/.test(m),
    action: `the database in ${URL_SOURCES} has no vcu-sync tables: start a replica (it migrates) or run vcu-sync db migrate, or correct the URL`,
  },
  {
    test: (c, m) => c === '53300' || /too many (clients|connections)/i.test(m),
    action: "the server's max_connections is reached: lower the replicas' pools or raise max_connections",
  },
  {
    test: (c, m) => c === '57P03' || /starting up|shutting down|recovery mode/i.test(m),
    action: 'the server is starting, stopping or in recovery: wait for it, then ask again',
  },
  {
    test: (_c, m) => /SSL|TLS|certificate/i.test(m),
    action: `TLS to the server failed: check the URL's sslmode (and sslrootcert) in ${URL_SOURCES} against the server's ssl settings`,
  },
];

/** The fallback: nothing answered, or an answer not recognised. */
const UNREACHABLE = `check that the PostgreSQL server is up and reachable from this host (its listen_addresses, port, firewall), and the host, port and database in ${URL_SOURCES}`;

/** What the on-call engineer should do about a PostgreSQL read that failed with `err`. */
export function pgReadAdvice(err: unknown): string {
  const code = codeOf(err);
  const message = err instanceof Error ? err.message : String(err);
  return ADVICE.find((a) => a.test(code, message))?.action ?? UNREACHABLE;
}

/** What to do while the server cannot be reached at all (status's `database-unreachable`). */
export const UNREACHABLE_ACTION =
  'check the server (pg_isready, systemctl status postgresql, its log), the network and database.url; the daemon reconnects on its own, no restart needed';
