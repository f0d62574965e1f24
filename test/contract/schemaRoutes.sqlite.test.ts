import { ManualClock } from '../../src/common/clock.js';
import { startSimulator } from '../../src/simulator/index.js';
import { sqliteMirror } from './mirrorStores.js';
import { FIRST_DAY, schemaContext, schemaRoutesCases, seedShape, TOKEN } from './schemaRoutes.cases.js';
import { serveApi } from './serveApi.js';

/** `GET /v1/schema`'s contract over the SQLite mirror, the test context's file: no PostgreSQL needed. */

schemaRoutesCases('the SQLite mirror', async () => {
  const clock = new ManualClock(Date.parse(`${FIRST_DAY}T00:00:00Z`));
  const sim = await startSimulator({ projects: 30, issuances: 20, units: 60 });
  const ctx = schemaContext(sim, clock);
  const drift = await seedShape(sim, ctx, clock, [sqliteMirror(ctx)]);
  const api = await serveApi(ctx, {}, TOKEN);
  return {
    drift,
    call: api.call,
    close: async () => {
      await api.stop();
      ctx.operator().close();
      ctx.dispose();
      await sim.close();
    },
  };
});
