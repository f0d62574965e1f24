import { is } from 'drizzle-orm';
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import * as pgSchema from '../../src/db/schema/postgres.js';
import { pgApplicationName } from '../../src/postgres/connection.js';
import { appliedMigrations, openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

/** What the schema declares, per table and column: information_schema's data_type. */
function declaredTypes(): Map<string, string> {
  const types = new Map<string, string>();
  for (const table of Object.values(pgSchema)) {
    if (!is(table, PgTable)) continue;
    const config = getTableConfig(table);
    for (const column of config.columns) types.set(`${config.name}.${column.name}`, column.getSQLType());
  }
  return types;
}

describe('PostgreSQL migrations on a real server', () => {
  const cluster = inject('postgres');
  let database: TestDatabase;
  let store: PgDatabase;

  beforeAll(async () => {
    database = await createTestDatabase(cluster);
    store = await openPostgres(database.url, { applicationName: pgApplicationName('replica-a') });
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it('creates every table and column with the declared type, as a role that is not a superuser', async () => {
    const { rows: who } = await store.pool.query<{ super: boolean }>(
      'SELECT rolsuper AS super FROM pg_roles WHERE rolname = current_user',
    );
    expect(who[0]?.super).toBe(false);
    const { rows } = await store.pool.query<{ table_name: string; column_name: string; data_type: string }>(
      `SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = 'public'`,
    );
    const actual = new Map(rows.map((r) => [`${r.table_name}.${r.column_name}`, r.data_type]));
    expect(actual).toEqual(declaredTypes());
    // The contract's own words, spelled out on a few columns.
    expect(actual.get('projects.projectID')).toBe('text');
    expect(actual.get('projects._raw')).toBe('jsonb');
    expect(actual.get('projects._first_seen_at')).toBe('timestamp with time zone');
    expect(actual.get('unit_operations.unitsOperationID')).toBe('text');
    expect(actual.get('outbox.next_attempt_at')).toBe('timestamp with time zone');
    expect(actual.get('changes.seq')).toBe('bigint');
  });

  it('numbers changes.seq by an identity, and keeps quoted interface names', async () => {
    const { rows } = await store.pool.query<{ is_identity: string }>(
      `SELECT is_identity FROM information_schema.columns WHERE table_name = 'changes' AND column_name = 'seq'`,
    );
    expect(rows[0]?.is_identity).toBe('YES');
    await store.pool.query(
      `INSERT INTO changes (resource, record_id, kind, at) VALUES ('projects', '12', 'insert', now()), ('projects', '13', 'insert', now())`,
    );
    const seqs = await store.pool.query<{ seq: string }>('SELECT seq FROM changes ORDER BY seq');
    expect(seqs.rows.map((r) => Number(r.seq))).toEqual([1, 2]);
    await store.pool.query(
      `INSERT INTO projects ("projectID", "projectName", cobenefit, _raw, _hash, _first_seen_at, _last_seen_at)
       VALUES ($1, 'P', '["water"]', $2, 'h', now(), now())`,
      ['12', JSON.stringify({ projectID: 12, projectName: 'P', extra: { kept: true } })],
    );
    const { rows: read } = await store.pool.query<{ id: string; kept: boolean }>(
      `SELECT "projectID" AS id, (_raw->'extra'->>'kept')::boolean AS kept FROM projects WHERE "projectID" = '12'`,
    );
    expect(read).toEqual([{ id: '12', kept: true }]);
  });

  it('is idempotent: opening again applies nothing and keeps the rows', async () => {
    const before = await appliedMigrations(store.pool);
    expect(before).toBeGreaterThanOrEqual(1);
    const again = await openPostgres(database.url);
    try {
      expect(await appliedMigrations(again.pool)).toBe(before);
      const { rows } = await again.pool.query<{ n: string }>('SELECT count(*) AS n FROM changes');
      expect(Number(rows[0]?.n)).toBe(2);
    } finally {
      await again.close();
    }
  });

  it('lets several replicas start at once on an empty database: one migrates, the others wait and find it done', async () => {
    const fresh = await createTestDatabase(cluster);
    try {
      const replicas = await Promise.all([1, 2, 3, 4].map(() => openPostgres(fresh.url, { max: 1 })));
      try {
        const counts = await Promise.all(replicas.map((r) => appliedMigrations(r.pool)));
        expect(new Set(counts).size).toBe(1);
        const { rows } = await replicas[0]!.pool.query<{ n: string }>(
          `SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = 'public'`,
        );
        expect(Number(rows[0]?.n)).toBe(Object.values(pgSchema).filter((t) => is(t, PgTable)).length);
      } finally {
        await Promise.all(replicas.map((r) => r.close()));
      }
    } finally {
      await fresh.drop();
    }
  });

  it('names its sessions vcu-sync/<instance> and reads times in UTC', async () => {
    const { rows } = await store.pool.query<{ name: string; tz: string; at: string }>(
      `SELECT current_setting('application_name') AS name, current_setting('TimeZone') AS tz,
              '2024-05-01T12:00:00+02:00'::timestamptz::text AS at`,
    );
    expect(rows[0]).toEqual({ name: 'vcu-sync/replica-a', tz: 'UTC', at: '2024-05-01 10:00:00+00' });
    const { rows: own } = await store.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'vcu-sync/replica-a' AND datname = current_database()`,
    );
    expect(Number(own[0]?.n)).toBeGreaterThanOrEqual(1);
    // A name the URL gives wins.
    const named = await openPostgres(
      database.urlWith({ sslmode: 'disable', application_name: 'reporting' }),
      {
        applicationName: pgApplicationName('replica-a'),
        migrate: false,
      },
    );
    try {
      const { rows: r } = await named.pool.query<{ name: string }>(
        `SELECT current_setting('application_name') AS name`,
      );
      expect(r[0]?.name).toBe('reporting');
    } finally {
      await named.close();
    }
  });

  it('rolls back a failing migration whole and names the database, not the password', async () => {
    const fresh = await createTestDatabase(cluster);
    try {
      // Something in the way of the first migration: a table of that name with another shape.
      const blocker = await openPostgres(fresh.url, { migrate: false });
      await blocker.pool.query('CREATE TABLE sync_seen (x int)');
      await blocker.close();
      const failure = await openPostgres(fresh.url).then(
        () => new Error('expected a failure'),
        (err: Error) => err,
      );
      expect(failure.message).toMatch(
        new RegExp(`^database: migration failed on 127\\.0\\.0\\.1:${cluster.port}/${fresh.name}: `),
      );
      expect(failure.message).toMatch(/: relation "sync_seen" already exists$/);
      expect(failure.message).not.toContain('\n');
      expect(failure.message).not.toContain(cluster.password);
      const check = await openPostgres(fresh.url, { migrate: false });
      try {
        const { rows } = await check.pool.query<{ n: string }>(
          `SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = 'public'`,
        );
        expect(Number(rows[0]?.n)).toBe(1);
      } finally {
        await check.close();
      }
    } finally {
      await fresh.drop();
    }
  });
});
