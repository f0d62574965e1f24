import { ManualClock } from '../../src/common/clock.js';
import { startSimulator } from '../../src/simulator/index.js';
import { mirrorReadsCases, readsContext, seedMirrors, TOKEN } from './mirrorReads.cases.js';
import { sqliteMirror } from './mirrorStores.js';
import { serveApi } from './serveApi.js';

/** The read API's contract over the SQLite mirror, the test context's file: no PostgreSQL needed. */

mirrorReadsCases('the SQLite mirror', async () => {
  const clock = new ManualClock();
  const sim = await startSimulator({ projects: 40, issuances: 90, units: 400 });
  const ctx = readsContext(sim, clock);
  const facts = await seedMirrors(sim, ctx, clock, [sqliteMirror(ctx)]);
  const api = await serveApi(ctx, {}, TOKEN);
  return {
    facts,
    call: api.call,
    close: async () => {
      await api.stop();
      ctx.operator().close();
      ctx.dispose();
      await sim.close();
    },
  };
});
