import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { cliArgs, ROOT, runNode } from '../helpers/cli.js';
import { tempDir } from '../helpers/context.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

/** How many PostgreSQL migrations have landed: what a first `db migrate` applies. */
const PG_MIGRATIONS = (
  JSON.parse(
    readFileSync(path.resolve(import.meta.dirname, '../../drizzle/pg/meta/_journal.json'), 'utf8'),
  ) as { entries: unknown[] }
).entries.length;

/** `vcu-sync` as a child process with database.url set, against the run's real cluster. */
describe('vcu-sync with database.url (PostgreSQL)', () => {
  const cluster = inject('postgres');
  let database: TestDatabase;
  let work: { dir: string; cleanup: () => void };
  /** Files the CLI reads (credentials, URL file), kept out of its working folder. */
  let aside: { dir: string; cleanup: () => void };
  /** Runs the CLI in an empty folder, so any SQLite file it wrongly creates is seen. */
  const cli = (args: string[], env: Record<string, string>) => runNode(cliArgs(args), env, work.dir);
  const secretFree = (r: { stdout: string; stderr: string }) => {
    expect(`${r.stdout}${r.stderr}`).not.toContain(cluster.password);
  };

  beforeAll(async () => {
    database = await createTestDatabase(cluster);
    work = tempDir();
    aside = tempDir();
  });
  afterAll(async () => {
    work?.cleanup();
    aside?.cleanup();
    await database?.drop();
  });

  it('db migrate creates the schema, and again finds nothing to do (env var, then credential over env)', async () => {
    const first = cli(['db', 'migrate'], { VCU_SYNC_DATABASE_URL: database.url });
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const line = `postgresql 127.0.0.1:${cluster.port}/${database.name}: schema up to date (${PG_MIGRATIONS} migrations applied)\n`;
    expect(first.stdout).toBe(line);
    secretFree(first);

    const creds = path.join(aside.dir, 'creds');
    mkdirSync(creds);
    writeFileSync(path.join(creds, 'database-url'), `${database.url}\n`);
    // The credential wins over an environment URL that points nowhere.
    const second = cli(['db', 'migrate'], {
      VCU_SYNC_DATABASE_URL: `postgres://nobody:nothing@127.0.0.1:1/${database.name}`,
      CREDENTIALS_DIRECTORY: creds,
    });
    expect(second.code).toBe(0);
    expect(second.stdout).toBe(line);

    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: string }>(
        `SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = 'public'`,
      );
      // Every table the PostgreSQL migrations create, and nothing else.
      const created = readdirSync(path.join(ROOT, 'drizzle/pg'))
        .filter((f) => f.endsWith('.sql'))
        .reduce(
          (n, f) =>
            n +
            (readFileSync(path.join(ROOT, 'drizzle/pg', f), 'utf8').match(/^CREATE TABLE/gm)?.length ?? 0),
          0,
        );
      expect(created).toBeGreaterThanOrEqual(18);
      expect(Number(rows[0]?.n)).toBe(created);
    } finally {
      await client.end();
    }
    expect(readdirSync(work.dir)).toEqual([]);
  });

  it('db migrate with a wrong password: exit 1, one line naming the server, no password, no SQLite file', () => {
    const url = new URL(database.url);
    url.password = 'not-the-password-77';
    const r = cli(['db', 'migrate'], { VCU_SYNC_DATABASE_URL: url.toString() });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      `vcu-sync: database: cannot connect to PostgreSQL at 127.0.0.1:${cluster.port}/${database.name}: password authentication failed for user "vcu_sync"\n`,
    );
    expect(r.stderr).not.toContain('not-the-password-77');
    expect(readdirSync(work.dir)).toEqual([]);
  });

  it('db backup says to use pg_dump, exit 64, and writes nothing', () => {
    const r = cli(['db', 'backup', 'copy.db'], { VCU_SYNC_DATABASE_URL_FILE: writeUrlFile() });
    expect(r.code).toBe(64);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      'vcu-sync: database.url is set: back up PostgreSQL with pg_dump (e.g. pg_dump --format=custom --file=FILE DBNAME); db backup copies a SQLite file only\n',
    );
    expect(readdirSync(work.dir)).toEqual([]);
  });

  it('config check prints the URL with its password masked', () => {
    const r = cli(['config', 'check'], {
      VCU_SYNC_DATABASE_URL: database.url,
      VCU_SYNC_OPERATOR_URL: 'http://127.0.0.1:9',
      VCU_SYNC_API_KEY: 'key-abcdef-123',
      VCU_SYNC_WEBHOOK_SECRET: `whsec_${Buffer.alloc(24, 3).toString('base64')}`,
    });
    expect(r.code).toBe(0);
    const printed = JSON.parse(r.stdout) as { database: { url: string } };
    expect(printed.database.url).toBe(
      `postgres://vcu_sync:********@127.0.0.1:${cluster.port}/${database.name}?sslmode=disable`,
    );
    secretFree(r);
  });

  function writeUrlFile(): string {
    const file = path.join(aside.dir, 'url');
    if (!existsSync(file)) writeFileSync(file, `${database.url}\n`, { mode: 0o600 });
    return file;
  }
});
