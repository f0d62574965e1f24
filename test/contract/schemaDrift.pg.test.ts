import { afterEach, beforeAll, expect, inject } from 'vitest';
import { pgBackend } from '../../src/postgres/mirror.js';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { pgMirror } from './mirrorStores.js';
import { schemaDriftCases } from './schemaDrift.cases.js';

/** Upstream schema drift on PostgreSQL, a fresh database per case. */

const cluster = inject('postgres');

let database: TestDatabase | undefined;
let store: PgDatabase | undefined;
beforeAll(() => {
  expect(cluster).toBeDefined();
});
afterEach(async () => {
  await store?.close();
  await database?.drop();
  store = undefined;
  database = undefined;
});

schemaDriftCases('postgres', async (_h, sink) => {
  database = await createTestDatabase(cluster);
  store = await openPostgres(database.url, { max: 4 });
  return { ...pgMirror(store), backend: pgBackend(store.pool, sink) };
});
