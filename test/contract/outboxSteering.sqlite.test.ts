import { afterAll, beforeAll } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { sqliteOutbox } from '../../src/sqlite/operationsStore.js';
import { testContext } from '../helpers/context.js';
import { outboxSteeringCases, T0 } from './outboxSteering.cases.js';

/** Steering's contract on SQLite, the test context's file: no PostgreSQL needed. */

const clock = new ManualClock(T0);
let ctx: ReturnType<typeof testContext>;

beforeAll(() => {
  ctx = testContext({ clock });
});
afterAll(() => {
  ctx?.dispose();
});

outboxSteeringCases('sqlite', () => ({
  outbox: sqliteOutbox(ctx, ctx.database.sqlite, { grouped: true }),
  exec: async (sql) => void ctx.database.sqlite.exec(sql),
  state: async (ref) =>
    (
      ctx.database.sqlite
        .prepare('SELECT state FROM outbox WHERE marketplaceTransactionRef = ?')
        .get(ref) as { state: string }
    ).state,
}));
