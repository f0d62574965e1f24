import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { mirrorReads } from '../../src/api/mirrorQueries.js';
import { createApiComponent, routeRegistrars } from '../../src/api/server.js';
import { silentLogger } from '../../src/common/log.js';
import { loadConfig } from '../../src/config/config.js';
import { createAppContext } from '../../src/context.js';
import { ChangeSignal } from '../../src/db/changeSignal.js';
import { feedReads } from '../../src/feed/feedReads.js';
import { pgClassifyFault, pgHealthReads, pgReadiness } from '../../src/postgres/health.js';
import { pgOutbox } from '../../src/postgres/operationsStore.js';
import { postgresScriptStore } from '../../src/postgres/scripts.js';
import { DeliveriesStore } from '../../src/subscribers/deliveriesStore.js';
import { freePort } from '../helpers/net.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';

/**
 * The API of a replica when PostgreSQL is away: a read that cannot reach the server answers 503
 * with Retry-After and a JSON reason (clients retry a 503, not a 500), names no password, and
 * touches no SQLite file (a PostgreSQL context has none); a query the server refuses for the
 * request's own sake stays a 500.
 */

const pgTest = useTestPgDatabase();
const PASSWORD = 'unavailable-secret-password';
const TOKEN = 'unavailable-token-0123456789';

let stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.reverse()) await stop();
  stops = [];
});

async function apiOver(pool: pg.Pool): Promise<string> {
  const config = loadConfig({
    env: {},
    overrides: {
      'database.url': 'postgres://vcu@127.0.0.1:1/none',
      'api.listen': '127.0.0.1:0',
      'api.token': TOKEN,
    },
  });
  const ctx = createAppContext(config, silentLogger);
  // Every area on PostgreSQL, as a replica wires them (pgDaemon.ts).
  const api = createApiComponent(
    ctx,
    routeRegistrars({
      mirrorReads: mirrorReads(postgresScriptStore(pool)),
      outbox: pgOutbox(ctx, pool, {}),
      healthReads: pgHealthReads(pool),
      deliveries: new DeliveriesStore(postgresScriptStore(pool)),
      feed: feedReads(postgresScriptStore(pool), new ChangeSignal()),
      reconciliation: postgresScriptStore(pool),
    }),
    { readiness: pgReadiness(pool), unavailable: pgClassifyFault },
  );
  await api.start();
  stops.push(() => api.stop());
  return `http://127.0.0.1:${api.address()!.port}`;
}

const get = (base: string, path: string) =>
  fetch(`${base}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });

describe('the API on PostgreSQL when the database is away', () => {
  it('a server that cannot be reached: 503, Retry-After, a JSON reason without the password', async () => {
    const closed = new pg.Pool({
      host: '127.0.0.1',
      port: await freePort(),
      user: 'vcu',
      password: PASSWORD,
    });
    closed.on('error', () => {});
    stops.push(() => closed.end().catch(() => {}));
    const base = await apiOver(closed);
    // A list, the learned shape (two reads at once: either failing answers for both), and the
    // reconciliation (its collation asked first, then three reads at once).
    for (const path of ['/v1/units', '/v1/schema?resource=units', '/v1/reconciliation']) {
      const res = await get(base, path);
      const text = await res.text();
      expect(res.status, path).toBe(503);
      expect(res.headers.get('retry-after')).toBe('2');
      expect(JSON.parse(text)).toEqual({ error: 'the database server cannot be reached; retry later' });
      expect(text).not.toContain(PASSWORD);
    }
  });

  it('the same routes answer 200 once the server is there, and a schema it lacks is a 500, not a retry', async () => {
    const base = await apiOver(pgTest.db.pool);
    expect((await get(base, '/v1/projects')).status).toBe(200);
    expect((await get(base, '/v1/reconciliation')).status).toBe(200);
    await pgTest.db.pool.query('ALTER TABLE projects RENAME TO projects_gone');
    try {
      const res = await get(base, '/v1/projects');
      expect(res.status).toBe(500);
      expect(await res.json()).toEqual({ error: 'internal error; see the daemon log' });
    } finally {
      await pgTest.db.pool.query('ALTER TABLE projects_gone RENAME TO projects');
    }
  });
});
