import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { selfSignedCertificate } from './certificate.js';
import { freePort } from './net.js';

/**
 * A throwaway PostgreSQL cluster for tests: Debian's server binaries (`.ci/test-deps` installs the
 * package `postgresql`), `initdb` into a temporary folder, `pg_ctl start` on a free loopback port,
 * removed after. As root the server runs as the `postgres` user (it refuses to run as root).
 * test/helpers/postgresSetup.ts starts one per test run (vitest globalSetup) and hands its
 * {@link ClusterInfo} to the test files, which each take a database of their own
 * ({@link createTestDatabase}) so files running side by side never see each other's rows.
 */

const run = promisify(execFile);

/** How tests reach a running cluster: what vitest's `provide`/`inject` carries (plain data). */
export interface ClusterInfo {
  host: string;
  port: number;
  /** Superuser (`postgres`), for creating databases. */
  adminUser: string;
  adminPassword: string;
  /** The role the daemon connects as: not a superuser, owner of each test database. */
  user: string;
  password: string;
  /** The server certificate (self-signed, for 127.0.0.1 and localhost) when started with TLS. */
  certFile: string | null;
}

/** A running cluster. */
export interface Cluster {
  info: ClusterInfo;
  /** The server's log file, for a failing test's message. */
  logFile: string;
  /** Stops the server at once and removes every file it had. */
  stop(): Promise<void>;
  /**
   * Stops the server but keeps its files, as an operator's `pg_ctl stop -m MODE` does (default:
   * fast: sessions are ended, clients see "terminating connection due to administrator command").
   */
  halt(mode?: 'smart' | 'fast' | 'immediate'): Promise<void>;
  /** Starts a halted server again on the same port and data; resolves once it accepts connections. */
  resume(): Promise<void>;
}

/** Options of {@link startCluster}. */
export interface ClusterOptions {
  /** Serve TLS with a fresh self-signed certificate (default: false, plain text only). */
  tls?: boolean;
  /** The server's `max_connections`, for connection-pressure tests (default: 200). */
  maxConnections?: number;
  /**
   * Make ICU the cluster's default locale provider with this locale (e.g. `en-US`), as `initdb
   * --locale-provider=icu` does: databases created from its templates then sort text as people
   * read it unless they choose otherwise (default: none, libc's `C`).
   */
  icuLocale?: string;
}

/** The newest installed server's bin folder, e.g. /usr/lib/postgresql/15/bin. */
export function postgresBinDir(): string {
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base)
    ? readdirSync(base)
        .filter((v) => existsSync(path.join(base, v, 'bin/initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) {
    throw new Error(
      'PostgreSQL server binaries not found (/usr/lib/postgresql/*/bin/initdb): run `bash .ci/test-deps` (installs the Debian package postgresql)',
    );
  }
  return path.join(base, versions[0] as string, 'bin');
}

const isRoot = () => process.getuid?.() === 0;

/** Runs a server binary as the user the cluster belongs to. */
async function asOwner(bin: string, args: string[], cwd: string): Promise<void> {
  const [file, argv] = isRoot() ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  // cwd: the server user may not be allowed into the test's working directory.
  await run(file, argv, { timeout: 120_000, cwd });
}

async function ownerIds(): Promise<{ uid: number; gid: number } | null> {
  if (!isRoot()) return null;
  const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim());
  const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
  return { uid, gid };
}

/** Starts a fresh cluster on a free loopback port; password authentication over TCP. */
export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const bin = postgresBinDir();
  const root = mkdtempSync(path.join(tmpdir(), 'vcu-sync-pg-'));
  const data = path.join(root, 'data');
  const logFile = path.join(root, 'server.log');
  const adminPassword = randomBytes(12).toString('hex');
  const pwFile = path.join(root, 'pw');
  writeFileSync(pwFile, `${adminPassword}\n`, { mode: 0o600 });
  const tls = options.tls ? await selfSignedCertificate(root) : null;
  const owner = await ownerIds();
  if (owner) {
    for (const file of [root, pwFile, ...(tls ? [tls.cert, tls.key] : [])])
      chownSync(file, owner.uid, owner.gid);
  }
  const remove = () => rmSync(root, { recursive: true, force: true });
  let started = false;
  try {
    await asOwner(
      path.join(bin, 'initdb'),
      [
        '-D',
        data,
        '-U',
        'postgres',
        `--pwfile=${pwFile}`,
        '--auth-host=scram-sha-256',
        '--auth-local=trust',
        '-E',
        'UTF8',
        '--locale=C',
        // The test's own constant, never input.
        ...(options.icuLocale ? ['--locale-provider=icu', `--icu-locale=${options.icuLocale}`] : []),
        '--no-sync',
        '--no-instructions',
      ],
      root,
    );
    const port = await freePort();
    const settings = [
      `-p ${port}`,
      `-k ${root}`,
      '-c listen_addresses=127.0.0.1',
      // A throwaway cluster: durability costs time and buys nothing.
      '-c fsync=off',
      '-c synchronous_commit=off',
      '-c full_page_writes=off',
      `-c max_connections=${options.maxConnections ?? 200}`,
      ...(tls ? ['-c ssl=on', `-c ssl_cert_file=${tls.cert}`, `-c ssl_key_file=${tls.key}`] : []),
    ];
    const startServer = async () => {
      try {
        await asOwner(
          path.join(bin, 'pg_ctl'),
          ['-D', data, '-l', logFile, '-w', '-t', '60', '-o', settings.join(' '), 'start'],
          root,
        );
      } catch (err) {
        const log = existsSync(logFile) ? readFileSync(logFile, 'utf8').slice(-2000) : '(no log)';
        throw new Error(`pg_ctl start failed: ${(err as Error).message}\n${log}`);
      }
    };
    await startServer();
    started = true;
    const info: ClusterInfo = {
      host: '127.0.0.1',
      port,
      adminUser: 'postgres',
      adminPassword,
      user: 'vcu_sync',
      password: randomBytes(12).toString('hex'),
      certFile: tls?.cert ?? null,
    };
    await withAdmin(info, (client) =>
      client.query(`CREATE ROLE ${info.user} LOGIN PASSWORD '${info.password}'`),
    );
    return {
      info,
      logFile,
      async stop() {
        await asOwner(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop'], root).catch(
          () => {},
        );
        remove();
      },
      async halt(mode = 'fast') {
        await asOwner(path.join(bin, 'pg_ctl'), ['-D', data, '-m', mode, '-w', '-t', '60', 'stop'], root);
      },
      resume: startServer,
    };
  } catch (err) {
    if (started)
      await asOwner(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop'], root).catch(() => {});
    remove();
    throw err;
  }
}

/** Runs `fn` on a superuser connection to the `postgres` database. */
export async function withAdmin<T>(info: ClusterInfo, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({
    host: info.host,
    port: info.port,
    user: info.adminUser,
    password: info.adminPassword,
    database: 'postgres',
  });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * Ends a backend as if its client's host died (`pg_terminate_backend`) and returns once it is gone:
 * termination is a signal, so this waits for a condition (the pid leaving pg_stat_activity), not a time.
 */
export async function terminateBackend(info: ClusterInfo, pid: number): Promise<void> {
  await withAdmin(info, async (admin) => {
    await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    for (let i = 0; i < 10_000; i++) {
      const { rowCount } = await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid]);
      if (!rowCount) return;
    }
    throw new Error('the terminated backend never went away');
  });
}

/** A database of one test file's own, owned by the daemon's role. */
export interface TestDatabase {
  name: string;
  /** `postgres://vcu_sync:PASSWORD@127.0.0.1:PORT/NAME?sslmode=disable`: what database.url would hold. */
  url: string;
  /** The same database through `url` with other query parameters (e.g. `{ sslmode: 'require' }`). */
  urlWith(params: Record<string, string>): string;
  drop(): Promise<void>;
}

/** Options of {@link createTestDatabase}. */
export interface TestDatabaseOptions {
  /**
   * An ICU locale (e.g. `en-US`) for the database's collation instead of the cluster's `C`: text
   * then sorts as people read it (`a` before `B`), as on many production servers.
   */
  icuLocale?: string;
}

/** Creates an empty database (no tables: migrations are the code under test) on the cluster. */
export async function createTestDatabase(
  info: ClusterInfo,
  options: TestDatabaseOptions = {},
): Promise<TestDatabase> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  // The locale is the test's own constant, never input.
  const locale = options.icuLocale
    ? ` TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE '${options.icuLocale}'`
    : '';
  await withAdmin(info, (client) => client.query(`CREATE DATABASE ${name} OWNER ${info.user}${locale}`));
  const urlWith = (params: Record<string, string>) => {
    const url = new URL(`postgres://${info.host}:${info.port}/${name}`);
    url.username = info.user;
    url.password = info.password;
    for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
    return url.toString();
  };
  return {
    name,
    url: urlWith({ sslmode: 'disable' }),
    urlWith,
    drop: () =>
      withAdmin(info, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(
        () => {},
      ),
  };
}
