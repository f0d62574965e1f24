import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sortsInByteOrder } from '../../src/api/mirrorQueries.js';
import { appliedMigrations, openPostgres } from '../../src/postgres/open.js';
import { postgresScriptStore } from '../../src/postgres/scripts.js';
import { ROOT } from '../helpers/cli.js';
import { type Cluster, startCluster, withAdmin } from '../helpers/postgres.js';

/**
 * README's "## PostgreSQL" prints the SQL that prepares a server for vcu-sync. Run here exactly as
 * printed, password included, on a cluster whose default collation is a language one (ICU en-US,
 * as `initdb --locale-provider=icu` makes): the role it creates, no superuser, migrates the database
 * it owns, and that database sorts text in byte order, so the read API's lists use their indexes.
 */

/** The statements of the first ```sql block of README's "## PostgreSQL" section. */
function readmeSetupStatements(): string[] {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## PostgreSQL\n');
  expect(start, 'README has a "## PostgreSQL" section').toBeGreaterThan(0);
  const block = /```sql\n([\s\S]*?)```/.exec(readme.slice(start))?.[1];
  if (!block) throw new Error('README\'s "## PostgreSQL" section has no ```sql block');
  // One statement at a time, as psql sends them: CREATE DATABASE refuses to run in a transaction.
  return block
    .split(/;\s*$/m)
    .map((statement) => statement.trim())
    .filter(Boolean);
}

/** The role, password and database the statements name, as the README's URL uses them. */
function urlOf(cluster: Cluster, database: string): string {
  return `postgres://vcu_sync:PASSWORD@${cluster.info.host}:${cluster.info.port}/${database}?sslmode=disable`;
}

describe("README's PostgreSQL set-up, run as printed", () => {
  let cluster: Cluster;
  const statements = readmeSetupStatements();

  beforeAll(async () => {
    cluster = await startCluster({ icuLocale: 'en-US' });
    // The helper creates the daemon's role itself; README's commands create it here instead.
    await withAdmin(cluster.info, (admin) => admin.query(`DROP ROLE ${cluster.info.user}`));
    await withAdmin(cluster.info, async (admin) => {
      for (const statement of statements) await admin.query(statement);
    });
  });
  afterAll(() => cluster?.stop());

  it('creates the role and the database README names', async () => {
    expect(statements).toHaveLength(2);
    expect(statements[0]).toMatch(/^CREATE ROLE vcu_sync LOGIN PASSWORD '/);
    expect(statements[1]).toMatch(/^CREATE DATABASE vcu_sync OWNER vcu_sync .*LC_COLLATE 'C'/);
    const { rows } = await withAdmin(cluster.info, (admin) =>
      admin.query<{ owner: string; collate: string; provider: string }>(
        `SELECT pg_get_userbyid(datdba) AS owner, datcollate AS collate, datlocprovider AS provider
         FROM pg_database WHERE datname = 'vcu_sync'`,
      ),
    );
    expect(rows).toEqual([{ owner: 'vcu_sync', collate: 'C', provider: 'c' }]);
  });

  it('lets that role, no superuser, migrate the database with the password README gives it', async () => {
    const store = await openPostgres(urlOf(cluster, 'vcu_sync'), { max: 2 });
    try {
      const { rows } = await store.pool.query<{ super: boolean; createdb: boolean }>(
        'SELECT rolsuper AS super, rolcreatedb AS createdb FROM pg_roles WHERE rolname = current_user',
      );
      expect(rows).toEqual([{ super: false, createdb: false }]);
      expect(await appliedMigrations(store.pool)).toBeGreaterThan(0);
      await store.pool.query(
        `INSERT INTO changes (resource, record_id, kind, at) VALUES ('projects', 'p-1', 'insert', now())`,
      );
      const { rows: changes } = await store.pool.query<{ n: string }>('SELECT count(*) AS n FROM changes');
      expect(changes).toEqual([{ n: '1' }]);
    } finally {
      await store.close();
    }
  });

  it('sorts text in byte order there, as SQLite does, where the cluster default would not', async () => {
    const store = await openPostgres(urlOf(cluster, 'vcu_sync'), { migrate: false, max: 1 });
    try {
      expect(await sortsInByteOrder(postgresScriptStore(store.pool))).toBe(true);
    } finally {
      await store.close();
    }
    // The same database without README's locale clauses: the cluster's ICU en-US, `a` before `B`.
    // And without `LOCALE_PROVIDER libc` alone: LC_COLLATE is ignored under ICU, as README warns.
    const withoutProvider = statements[1]!
      .replace(/ LOCALE_PROVIDER libc/, '')
      .replace('vcu_sync OWNER', 'vcu_sync_icu OWNER');
    expect(withoutProvider).not.toBe(statements[1]);
    await withAdmin(cluster.info, async (admin) => {
      await admin.query('CREATE DATABASE vcu_sync_default OWNER vcu_sync');
      await admin.query(withoutProvider);
    });
    for (const database of ['vcu_sync_default', 'vcu_sync_icu']) {
      const other = await openPostgres(urlOf(cluster, database), { migrate: false, max: 1 });
      try {
        expect(await sortsInByteOrder(postgresScriptStore(other.pool)), database).toBe(false);
      } finally {
        await other.close();
      }
    }
  });
});
