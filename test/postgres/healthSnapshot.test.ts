import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openPostgres, type PgDatabase } from '../../src/db/pg.js';
import { readHealth } from '../../src/status.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { CONFIG, HEALTH_CASES, NOW, pgHealthStore, sqliteHealthStore } from './healthStores.js';

/**
 * The health snapshot on both stores: the same situation written into a SQLite file and into
 * PostgreSQL reads back as the same snapshot, so the same rules raise the same problems with the
 * same words, and `vcu-sync status` answers alike on either. PostgreSQL's adds its replicas (none
 * here); SQLite's has none.
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

describe('the health snapshot on SQLite and PostgreSQL', () => {
  it.each(HEALTH_CASES)('$name', async ({ name, seed, codes }) => {
    const sqlite = sqliteHealthStore();
    const pg = await pgHealthStore(store);
    try {
      await seed(sqlite.exec);
      await seed(pg.exec);
      const onSqlite = await readHealth(sqlite.reads, CONFIG, NOW);
      const onPostgres = await readHealth(pg.reads, CONFIG, NOW);

      expect(onSqlite.problems.map((p) => p.code).sort()).toEqual([...codes].sort());
      expect(onSqlite.snapshot.database.readError).toBeNull();
      expect(onSqlite.snapshot.replicas).toBeUndefined();
      const { replicas, runningSyncs, ...shared } = onPostgres.snapshot;
      expect(replicas).toEqual([]);
      expect(runningSyncs).toEqual([]);
      expect({ ...onPostgres, snapshot: shared }).toEqual(onSqlite);
      // The status page's charts: the same points from either store (durations to the millisecond:
      // SQLite's julianday arithmetic is a float a few microseconds off).
      const series = await sqlite.reads.series(NOW);
      expect(await pg.reads.series(NOW)).toEqual(series);
      expect(series.queueDepth).toHaveLength(25);
      if (name.startsWith('a worst day')) {
        // A day with something to show draws it (runs, a queue, webhooks), not empty charts.
        expect(series.syncDurations.length).toBeGreaterThan(0);
        expect(series.queueDepth.some((p) => p.depth > 0)).toBe(true);
        expect(series.recentWebhooks.length).toBeGreaterThan(0);
      }
    } finally {
      await sqlite.close();
    }
  });

  it('a PostgreSQL database without the schema is a critical database-unreadable, not a crash', async () => {
    const bare = await createTestDatabase(cluster);
    const pool = await openPostgres(bare.url, { migrate: false, max: 1 });
    try {
      const { pgHealthReads } = await import('../../src/health/pgSnapshot.js');
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
