import { commitQueueFor } from '../../src/sqlite/commitQueue.js';
import { testContext } from '../helpers/context.js';
import { passAt, writeBook } from './reconciliationBook.js';
import { reconciliationRoutesCases, TOKEN } from './reconciliationRoutes.cases.js';
import { serveApi } from './serveApi.js';

/** `GET /v1/reconciliation`'s contract over a SQLite file (the test context's): no PostgreSQL needed. */

reconciliationRoutesCases('SQLite', async () => {
  const ctx = testContext({ overrides: { 'api.listen': '127.0.0.1:0', 'api.token': TOKEN } });
  const store = commitQueueFor(ctx.database.sqlite);
  const now = Date.parse('2026-03-10T00:00:00Z');
  await writeBook(store, now);
  await passAt(store, now);
  const api = await serveApi(ctx, {}, TOKEN);
  return {
    call: api.call,
    stores: [store],
    now,
    close: async () => {
      await api.stop();
      ctx.dispose();
    },
  };
});
