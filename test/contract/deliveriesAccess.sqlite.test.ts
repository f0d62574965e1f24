import { ManualClock } from '../../src/common/clock.js';
import { testContext } from '../helpers/context.js';
import { deliveriesAccessCases, ROWS, T0, TOKEN } from './deliveriesAccess.cases.js';
import { serveApi } from './serveApi.js';

/** The deliveries routes' and CLI's contract on SQLite, the test context's file: no PostgreSQL needed. */

deliveriesAccessCases('SQLite', async () => {
  const clock = new ManualClock(T0);
  const ctx = testContext({ clock, overrides: { 'api.listen': '127.0.0.1:0', 'api.token': TOKEN } });
  ctx.database.sqlite.exec(ROWS);
  const api = await serveApi(ctx, {}, TOKEN);
  return {
    clock,
    side: { call: api.call, config: ctx.config },
    close: async () => {
      await api.stop();
      ctx.dispose();
    },
  };
});
