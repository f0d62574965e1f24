import { ManualClock } from '../../src/common/clock.js';
import { testContext } from '../helpers/context.js';
import { operationsApiCases, T0, TOKEN } from './operationsApi.cases.js';
import { serveApi } from './serveApi.js';

/** The API operations routes' contract on SQLite, the test context's file: no PostgreSQL needed. */

operationsApiCases('SQLite', async () => {
  const clock = new ManualClock(T0);
  const ctx = testContext({ clock, overrides: { 'api.listen': '127.0.0.1:0', 'api.token': TOKEN } });
  const api = await serveApi(ctx, {}, TOKEN);
  return {
    clock,
    side: { call: api.call, exec: async (sql) => void ctx.database.sqlite.exec(sql) },
    close: async () => {
      await api.stop();
      ctx.dispose();
    },
  };
});
