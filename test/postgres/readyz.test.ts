import { createServer, type Socket } from 'node:net';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { ReadinessReader } from '../../src/health/readiness.js';
import { createWebhookComponent } from '../../src/inbox/listener.js';
import { PAUSE_KEY } from '../../src/outbox/pause.js';
import { pgReadiness } from '../../src/postgres/health.js';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { DEFAULT_WEBHOOK_SECRET } from '../../src/simulator/index.js';
import { sqliteInboxStore } from '../../src/sqlite/inboxStore.js';
import { ManualTimers } from '../feed/helpers.js';
import { testContext } from '../helpers/context.js';
import { freePort } from '../helpers/net.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { sqliteApiComponent } from '../helpers/sqliteApi.js';

/**
 * /readyz on PostgreSQL, over the real listeners: 200 when both listeners are up and the database
 * answers (writable, schema current, sending not paused); 503 naming each reason otherwise,
 * including a server that cannot be reached (a pool on a closed port) and one that accepts the
 * connection and never answers, which must not hold /readyz past its bound.
 */

const pgTest = useTestPgDatabase();
const PASSWORD = 'readyz-secret-password';

let stops: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const stop of stops.reverse()) await stop();
  stops = [];
});

/** The API (and, unless told otherwise, the webhook listener) with `readiness`; GET /readyz. */
async function serve(readiness: ReadinessReader, { webhook = true } = {}) {
  const ctx = testContext({
    overrides: {
      'api.listen': '127.0.0.1:0',
      'webhook.listen': '127.0.0.1:0',
      'api.token': 'readyz-token-0123456789',
      'webhook.secrets': [DEFAULT_WEBHOOK_SECRET],
    },
  });
  // As the daemon wires them: /readyz reads both listeners.
  const listeners = new Map<string, string>();
  const api = sqliteApiComponent(ctx, { readiness, listeners });
  const hook = createWebhookComponent(ctx, { store: sqliteInboxStore(ctx.database.sqlite), listeners });
  await api.start();
  if (webhook) await hook.start();
  stops.push(async () => {
    await hook.stop();
    await api.stop();
    ctx.dispose();
  });
  const base = `http://127.0.0.1:${api.address()!.port}`;
  return {
    hook,
    readyz: async () => {
      const res = await fetch(`${base}/readyz`);
      const text = await res.text();
      return { status: res.status, text, body: JSON.parse(text) as { ready: boolean; reasons: string[] } };
    },
  };
}

/** A pool that is not the test's, closed after the test. */
function pool(config: pg.PoolConfig): pg.Pool {
  const p = new pg.Pool({ user: 'vcu', password: PASSWORD, database: 'nowhere', ...config });
  p.on('error', () => {});
  stops.push(() => p.end().catch(() => {}));
  return p;
}

/** Yields to the event loop until `check` holds (bounded), instead of sleeping for time to pass. */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200_000 && !check(); i++) await new Promise((r) => setImmediate(r));
  if (!check()) throw new Error(`never: ${what}`);
}

describe('GET /readyz on PostgreSQL', () => {
  it('200 when both listeners are up and the database answers; 503 naming a listener that is down', async () => {
    const { readyz, hook } = await serve(pgReadiness(pgTest.db.pool));
    expect(await readyz()).toMatchObject({ status: 200, body: { ready: true, reasons: [] } });
    await hook.stop();
    expect(await readyz()).toMatchObject({
      status: 503,
      body: { ready: false, reasons: ['webhook-listener not listening'] },
    });
  });

  it('503 when the database cannot be reached (a closed port), naming why and never the password', async () => {
    const port = await freePort();
    const { readyz } = await serve(pgReadiness(pool({ host: '127.0.0.1', port })));
    const answer = await readyz();
    expect(answer.status).toBe(503);
    // A server that is not there is its own reason, as status's `database-unreachable` problem.
    expect(answer.body.reasons).toEqual([`database-unreachable: connect ECONNREFUSED 127.0.0.1:${port}`]);
    expect(answer.text).not.toContain(PASSWORD);
  });

  it('503 after the bound when the server takes the connection and never answers; one read in flight, not one per probe', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    const hanging = pool({ host: '127.0.0.1', port });
    // Stopped before the pool ends (stops run in reverse): the pool waits for its connection attempt.
    stops.push(
      () =>
        new Promise<void>((resolve) => {
          for (const s of sockets) s.destroy();
          silent.close(() => resolve());
        }),
    );
    const timers = new ManualTimers();
    const { readyz } = await serve(pgReadiness(hanging, { schedule: timers.schedule }));
    const first = readyz();
    await until(() => timers.armed === 1 && sockets.length === 1, 'the probe waits on its connection');
    timers.fire(2_000);
    expect((await first).body).toEqual({
      ready: false,
      reasons: ['database not answering: no answer within 2 s'],
    });
    // The next probe waits on the read still in flight instead of opening another connection.
    const second = readyz();
    await until(() => timers.armed === 1, 'the second probe waits');
    timers.fire(2_000);
    expect((await second).status).toBe(503);
    expect(sockets).toHaveLength(1);
  });

  it('503 when the server is read-only (a standby)', async () => {
    const url = new URL(pgTest.database.url);
    url.searchParams.set('options', '-c default_transaction_read_only=on');
    const readOnly: PgDatabase = await openPostgres(url.toString(), { migrate: false });
    stops.push(() => readOnly.close());
    const { readyz } = await serve(pgReadiness(readOnly.pool));
    expect(await readyz()).toMatchObject({
      status: 503,
      body: {
        reasons: [
          'database not writable: the server is read-only (a standby, or default_transaction_read_only)',
        ],
      },
    });
  });

  it('503 while the schema is behind this build and while sending is paused; 200 once both are cleared', async () => {
    const db = pgTest.db.pool;
    const { readyz } = await serve(pgReadiness(db));
    const newest = await db.query<{ id: number; hash: string; created_at: string }>(
      'SELECT id, hash, created_at FROM drizzle.__drizzle_migrations ORDER BY created_at DESC LIMIT 1',
    );
    const applied = newest.rows[0]!;
    await db.query('DELETE FROM drizzle.__drizzle_migrations WHERE id = $1', [applied.id]);
    await db.query(`INSERT INTO daemon_state (key, value, updated_at) VALUES ($1, $2, now())`, [
      PAUSE_KEY,
      JSON.stringify({ reason: 'operator answered 401', status: 401, since: '2026-11-25T20:00:00.000Z' }),
    ]);
    try {
      expect(await readyz()).toMatchObject({
        status: 503,
        body: {
          reasons: [
            'database schema behind: 1 migration(s) not applied',
            'sending paused: operator answered 401',
          ],
        },
      });
    } finally {
      await db.query('INSERT INTO drizzle.__drizzle_migrations (id, hash, created_at) VALUES ($1, $2, $3)', [
        applied.id,
        applied.hash,
        applied.created_at,
      ]);
      await db.query('DELETE FROM daemon_state WHERE key = $1', [PAUSE_KEY]);
    }
    expect(await readyz()).toMatchObject({ status: 200, body: { ready: true } });
  });
});
