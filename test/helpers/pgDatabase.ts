import { afterAll, beforeAll, inject } from 'vitest';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { createTestDatabase, type TestDatabase } from './postgres.js';

/** The throwaway database of one test file and a pool on it; read its fields inside tests. */
export interface TestPgDatabase {
  readonly database: TestDatabase;
  readonly db: PgDatabase;
}

/**
 * A throwaway database on the run's cluster (test/helpers/postgresSetup.ts) for the calling test
 * file, with one pool open on it: made before its tests, closed and dropped after them. Call at the
 * top of a file in the `postgres` project.
 */
export function useTestPgDatabase(): TestPgDatabase {
  const cluster = inject('postgres');
  const handle = {} as { database: TestDatabase; db: PgDatabase };
  beforeAll(async () => {
    handle.database = await createTestDatabase(cluster);
    handle.db = await openPostgres(handle.database.url);
  });
  afterAll(async () => {
    await handle.db?.close();
    await handle.database?.drop();
  });
  return handle;
}
