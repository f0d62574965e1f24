import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { readHealth } from '../../src/health/readHealth.js';
import { pgHealthReads } from '../../src/postgres/health.js';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { healthSnapshotCases } from './healthSnapshot.cases.js';
import { CONFIG, NOW, pgHealthStore, sqliteHealthStore } from './healthStores.js';

/**
 * The health snapshot's contract on PostgreSQL, each case also read from a SQLite file seeded alike:
 * PostgreSQL's snapshot is SQLite's plus its replicas (none here), so the same rules raise the same
 * problems with the same words, and `vcu-sync status` answers alike on either. Then a database
 * without the schema.
 */

const cluster = inject('postgres');
let database: TestDatabase;
let store: PgDatabase;

beforeAll(async () => {
  database = await createTestDatabase(cluster);
  store = await openPostgres(database.url, { max: 2 });
});
afterAll(async () => {
  await store?.close();
  await database?.drop();
});

healthSnapshotCases('PostgreSQL', () => pgHealthStore(store), {
  ownParts: (snapshot) => {
    expect(snapshot.replicas).toEqual([]);
    expect(snapshot.runningSyncs).toEqual([]);
  },
  // SQLite as the reference: the same snapshot, problems and chart points (durations to the
  // millisecond: SQLite's julianday arithmetic is a float a few microseconds off).
  also: async (c, onPostgres, series) => {
    const sqlite = sqliteHealthStore();
    try {
      await c.seed(sqlite.exec);
      const onSqlite = await readHealth(sqlite.reads, CONFIG, NOW);
      const { replicas: _replicas, runningSyncs: _running, ...shared } = onPostgres.snapshot;
      // Each identity names its own store: the server (never its credentials), the file.
      expect(onPostgres.identity.database).toEqual({ kind: 'postgres', location: store.label });
      const identity = { ...onPostgres.identity, database: onSqlite.identity.database };
      expect({ ...onPostgres, identity, snapshot: shared }).toEqual(onSqlite);
      expect(series).toEqual(await sqlite.reads.series(NOW));
    } finally {
      await sqlite.close();
    }
  },
});

describe('the health snapshot on PostgreSQL only', () => {
  it('a PostgreSQL database without the schema is a critical database-unreadable, not a crash', async () => {
    const bare = await createTestDatabase(cluster);
    const pool = await openPostgres(bare.url, { migrate: false, max: 1 });
    try {
      const health = await readHealth(pgHealthReads(pool.pool), CONFIG, NOW);
      expect(health.exitCode).toBe(2);
      expect(health.problems.map((p) => p.code)).toEqual(['database-unreadable']);
      expect(health.problems[0]?.message).toMatch(/relation "\w+" does not exist/);
      expect(health.problems[0]?.action).toMatch(/has no vcu-sync tables: start a replica \(it migrates\)/);
      expect(health.snapshot.resources).toEqual([]);
    } finally {
      await pool.close();
      await bare.drop();
    }
  });
});
