import { expect, inject } from 'vitest';
import { mirrorReads } from '../../src/api/mirrorQueries.js';
import { ManualClock } from '../../src/common/clock.js';
import { openPostgres } from '../../src/postgres/open.js';
import { postgresScriptStore } from '../../src/postgres/scripts.js';
import { startSimulator } from '../../src/simulator/index.js';
import { createTestDatabase } from '../helpers/postgres.js';
import { mirrorReadsCases, readsContext, seedMirrors, TOKEN } from './mirrorReads.cases.js';
import { pgMirror, sqliteMirror } from './mirrorStores.js';
import { serveApi } from './serveApi.js';

/**
 * The read API's contract over the PostgreSQL mirror, a SQLite mirror of the same registry synced
 * beside it (the same runs, the same clock) whose API must answer the same bytes. Twice: on a
 * database collated in byte order as SQLite is (`C`), and on one collated for people (ICU `en-US`).
 */

const cluster = inject('postgres');

for (const { collation, icuLocale } of [
  { collation: 'C, byte order as on SQLite', icuLocale: undefined },
  { collation: 'ICU en-US', icuLocale: 'en-US' },
]) {
  mirrorReadsCases(`the PostgreSQL mirror (${collation}) answers as over SQLite`, async () => {
    expect(cluster).toBeDefined();
    const clock = new ManualClock();
    const sim = await startSimulator({ projects: 40, issuances: 90, units: 400 });
    const ctx = readsContext(sim, clock);
    const database = await createTestDatabase(cluster, icuLocale ? { icuLocale } : {});
    const store = await openPostgres(database.url, { max: 4 });
    const facts = await seedMirrors(sim, ctx, clock, [sqliteMirror(ctx), pgMirror(store)]);
    const onSqlite = await serveApi(ctx, {}, TOKEN);
    const onPostgres = await serveApi(
      ctx,
      { mirrorReads: mirrorReads(postgresScriptStore(store.pool)) },
      TOKEN,
    );
    return {
      facts,
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
}
