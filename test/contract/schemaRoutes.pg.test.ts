import { expect, inject } from 'vitest';
import { mirrorReads } from '../../src/api/mirrorQueries.js';
import { ManualClock } from '../../src/common/clock.js';
import { openPostgres } from '../../src/postgres/open.js';
import { postgresScriptStore } from '../../src/postgres/scripts.js';
import { startSimulator } from '../../src/simulator/index.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { pgMirror, sqliteMirror } from './mirrorStores.js';
import { FIRST_DAY, schemaContext, schemaRoutesCases, seedShape, TOKEN } from './schemaRoutes.cases.js';
import { serveApi } from './serveApi.js';

/**
 * `GET /v1/schema`'s contract over the PostgreSQL mirror, a SQLite mirror of the same registry synced
 * beside it (the same runs, the same clock) whose API must answer the same bytes. The database is
 * collated for people (ICU `en-US`, where `annualEstimatedUnits` sorts before `ProjectStatusDate`):
 * the fields must still come in SQLite's order.
 */

const cluster = inject('postgres');

schemaRoutesCases('the PostgreSQL mirror (ICU en-US) answers as over SQLite', async () => {
  expect(cluster).toBeDefined();
  const clock = new ManualClock(Date.parse(`${FIRST_DAY}T00:00:00Z`));
  const sim = await startSimulator({ projects: 30, issuances: 20, units: 60 });
  const ctx = schemaContext(sim, clock);
  const database = await createTestDatabase(cluster, { icuLocale: 'en-US' });
  const store = await openPostgres(database.url, { max: 4 });
  const drift = await seedShape(sim, ctx, clock, [sqliteMirror(ctx), pgMirror(store)]);
  const onSqlite = await serveApi(ctx, {}, TOKEN);
  const onPostgres = await serveApi(
    ctx,
    { mirrorReads: mirrorReads(postgresScriptStore(store.pool)) },
    TOKEN,
  );
  return {
    drift,
    call: onPostgres.call,
    reference: onSqlite.call,
    close: async () => {
      await onSqlite.stop();
      await onPostgres.stop();
      await store.close();
      await database.drop();
      ctx.operator().close();
      ctx.dispose();
      await sim.close();
    },
  };
});
