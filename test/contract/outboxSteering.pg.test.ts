import { afterAll, beforeAll, inject } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { pgOutbox } from '../../src/postgres/operationsStore.js';
import { testContext } from '../helpers/context.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { outboxSteeringCases, T0 } from './outboxSteering.cases.js';

/** Steering's contract on PostgreSQL, a database of the file's own. */

const cluster = inject('postgres');

let database: TestDatabase;
let pgDb: PgDatabase;
const clock = new ManualClock(T0);
let ctx: ReturnType<typeof testContext>;

beforeAll(async () => {
  database = await createTestDatabase(cluster);
  pgDb = await openPostgres(database.url);
  ctx = testContext({ clock });
});
afterAll(async () => {
  await pgDb?.close();
  await database?.drop();
  ctx?.dispose();
});

outboxSteeringCases('postgres', () => ({
  outbox: pgOutbox(ctx, pgDb.pool, {}),
  exec: async (sql) => void (await pgDb.pool.query(sql)),
  state: async (ref) =>
    (await pgDb.pool.query('SELECT state FROM outbox WHERE "marketplaceTransactionRef" = $1', [ref])).rows[0]
      .state as string,
}));
