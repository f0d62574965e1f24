import { existsSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiComponent, ROUTE_REGISTRARS, routeRegistrars } from '../../src/api/server.js';
import { ManualClock } from '../../src/clock.js';
import { runDeliveriesCli } from '../../src/commands/deliveries.js';
import { loadConfig } from '../../src/config.js';
import { pgDeliveriesAccess } from '../../src/subscribers/pgStore.js';
import { testContext } from '../helpers/context.js';
import { apiCaller } from '../helpers/http.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';

/**
 * `/v1/deliveries` and `vcu-sync deliveries` answer the same on PostgreSQL as on SQLite: the same
 * rows written on both, then the same requests and commands in the same order, each side's answer
 * compared with SQLite's (times the CLI takes from its own clock masked). The CLI runs through its
 * real entry: on PostgreSQL from `database.url`, with no SQLite file made.
 */

const TOKEN = 'test-api-token-0123456789';
const T0 = Date.parse('2026-03-01T12:00:00.000Z');
const pg = useTestPgDatabase();

/** Rows valid SQL on both dialects (ISO text is a timestamptz literal on PostgreSQL). */
const ROWS = `INSERT INTO deliveries (subscriber, event_type, ref, webhook_id, body, state, attempts, next_attempt_at,
    lease_owner, lease_until, last_error, last_status, created_at, updated_at, delivered_at, dead_at) VALUES
  ('a', 'operation.accepted', 'op-1', 'msg_1', '{}', 'delivered', 1, '2026-03-01T10:00:00.000Z', NULL, NULL, NULL, 200,
   '2026-03-01T10:00:00.000Z', '2026-03-01T10:00:01.000Z', '2026-03-01T10:00:01.000Z', NULL),
  ('a', 'operation.approved', 'op-1', 'msg_2', '{}', 'dead', 7, '2026-03-01T10:05:00.000Z', NULL, NULL,
   'HTTP 500 (after 7 attempts)', 500, '2026-03-01T10:00:00.000Z', '2026-03-01T11:30:00.000Z', NULL, '2026-03-01T11:30:00.000Z'),
  ('b', 'operation.accepted', 'op-1', 'msg_3', '{}', 'dead', 3, '2026-03-01T09:00:00.000Z', NULL, NULL,
   'request ECONNREFUSED (older than the maximum age)', NULL, '2026-03-01T08:00:00.000Z', '2026-03-01T09:00:00.000Z', NULL,
   '2026-03-01T09:00:00.000Z'),
  ('a', 'operation.accepted', 'op-2', 'msg_4', '{}', 'pending', 2, '2026-03-01T13:00:00.000Z', NULL, NULL, 'HTTP 503', 503,
   '2026-03-01T11:00:00.000Z', '2026-03-01T11:10:00.000Z', NULL, NULL),
  ('b', 'operation.accepted', 'op-2', 'msg_5', '{}', 'sending', 1, '2026-03-01T11:00:00.000Z', 'replica-x',
   '2026-03-01T12:30:00.000Z', NULL, NULL, '2026-03-01T11:00:00.000Z', '2026-03-01T11:59:00.000Z', NULL, NULL),
  ('b', 'operation.rejected', 'op-3', 'msg_6', '{}', 'pending', 0, '2026-03-01T11:00:00.000Z', NULL, NULL, NULL, NULL,
   '2026-03-01T11:00:00.000Z', '2026-03-01T11:00:00.000Z', NULL, NULL)`;

type Side = 'sqlite' | 'postgres';

describe('deliveries routes and CLI answer the same on SQLite and PostgreSQL', () => {
  const clock = new ManualClock(T0);
  let ctx: ReturnType<typeof testContext>;
  const calls = {} as Record<Side, ReturnType<typeof apiCaller>>;
  const stops: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    ctx = testContext({ clock, overrides: { 'api.listen': '127.0.0.1:0', 'api.token': TOKEN } });
    ctx.database.sqlite.exec(ROWS);
    await pg.db.pool.query(ROWS);
    const deliveries = pgDeliveriesAccess(pg.db.pool);
    for (const [side, registrars] of [
      ['sqlite', ROUTE_REGISTRARS],
      ['postgres', routeRegistrars({ deliveries })],
    ] as const) {
      const api = createApiComponent(ctx, registrars);
      await api.start();
      stops.push(() => api.stop());
      calls[side] = apiCaller(`http://127.0.0.1:${api.address()!.port}`, TOKEN);
    }
  });
  afterAll(async () => {
    for (const stop of stops) await stop();
    ctx?.dispose();
  });

  /** The same request on both APIs: SQLite's answer, after checking PostgreSQL's is the same. */
  async function both(method: string, url: string, body?: unknown) {
    const answers = [];
    for (const side of ['sqlite', 'postgres'] as const) {
      const a = await calls[side](method, url, body);
      answers.push({ status: a.status, text: a.text });
    }
    expect(answers[1]).toEqual(answers[0]);
    return { status: answers[0]!.status, json: JSON.parse(answers[0]!.text) as Record<string, unknown> };
  }

  it('lists page by page, by state and by subscriber; a bad state or cursor is a 400', async () => {
    const ids = (j: Record<string, unknown>) => (j.items as Array<{ id: number }>).map((i) => i.id);
    const first = await both('GET', '/v1/deliveries?limit=4');
    expect([ids(first.json), first.json.nextCursor]).toEqual([[1, 2, 3, 4], '4']);
    const second = await both('GET', '/v1/deliveries?limit=4&cursor=4');
    expect([ids(second.json), second.json.nextCursor]).toEqual([[5, 6], null]);
    expect(ids((await both('GET', '/v1/deliveries?state=dead')).json)).toEqual([2, 3]);
    expect(ids((await both('GET', '/v1/deliveries?subscriber=b&state=pending')).json)).toEqual([6]);
    expect((await both('GET', '/v1/deliveries?state=lost')).status).toBe(400);
    expect((await both('GET', '/v1/deliveries?cursor=x')).status).toBe(400);
  });

  it('retry: a dead row back (attempts reset), a pending one made due now; delivered or sending 409, unknown 404', async () => {
    clock.advance(1000);
    const dead = await both('POST', '/v1/deliveries/2/retry');
    expect(dead).toMatchObject({
      status: 200,
      json: { id: 2, state: 'pending', attempts: 0, nextAttemptAt: '2026-03-01T12:00:01.000Z', deadAt: null },
    });
    const waiting = await both('POST', '/v1/deliveries/4/retry');
    expect(waiting.json).toMatchObject({
      state: 'pending',
      attempts: 2,
      nextAttemptAt: '2026-03-01T12:00:01.000Z',
    });
    expect((await both('POST', '/v1/deliveries/1/retry')).status).toBe(409);
    expect((await both('POST', '/v1/deliveries/5/retry')).status).toBe(409);
    expect((await both('POST', '/v1/deliveries/99/retry')).status).toBe(404);
  });

  it('redrive: the dead rows since a time, of one subscriber if named', async () => {
    clock.advance(1000);
    expect((await both('POST', '/v1/deliveries/redrive', { since: '1h', subscriber: 'a' })).json).toEqual({
      since: '2026-03-01T11:00:02.000Z',
      redriven: 0,
      ids: [],
    });
    expect((await both('POST', '/v1/deliveries/redrive', { since: '2026-03-01T08:00:00Z' })).json).toEqual({
      since: '2026-03-01T08:00:00.000Z',
      redriven: 1,
      ids: [3],
    });
    expect((await both('POST', '/v1/deliveries/redrive', {})).status).toBe(400);
  });

  it('vcu-sync deliveries: the same output and exit codes, on PostgreSQL from database.url without a SQLite file', async () => {
    const neverDb = path.join(ctx.dir, 'pg-side', 'never.db');
    const configs: Record<Side, ReturnType<typeof loadConfig>> = {
      sqlite: ctx.config,
      postgres: loadConfig({ env: { VCU_SYNC_DB: neverDb, VCU_SYNC_DATABASE_URL: pg.database.url } }),
    };
    const TIME = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g;
    async function cli(action: string, id: string | undefined, opts: Record<string, string | boolean> = {}) {
      const answers = [];
      for (const side of ['sqlite', 'postgres'] as const) {
        const stdout = new PassThrough();
        const stderr = new PassThrough();
        let out = '';
        let err = '';
        stdout.on('data', (d: Buffer) => {
          out += String(d);
        });
        stderr.on('data', (d: Buffer) => {
          err += String(d);
        });
        const code = await runDeliveriesCli(configs[side], action, id, { ...opts, stdout, stderr });
        answers.push({ code, out: out.replace(TIME, '<time>'), err });
      }
      expect(answers[1]).toEqual(answers[0]);
      return answers[0]!;
    }
    const list = await cli('list', undefined);
    expect(list.code).toBe(0);
    expect(list.out.split('\n')[0]).toMatch(/^ID\s+SUBSCRIBER\s+EVENT/);
    expect(list.out.split('\n').filter((l) => /^\d/.test(l))).toHaveLength(6);
    const dead = await cli('list', undefined, { json: true, state: 'pending', subscriber: 'b' });
    expect((JSON.parse(dead.out) as { items: Array<{ id: number }> }).items.map((i) => i.id)).toEqual([3, 6]);
    expect(await cli('retry', '1')).toMatchObject({
      code: 1,
      err: expect.stringContaining('delivery 1 is delivered'),
    });
    expect(await cli('retry', '99')).toMatchObject({ code: 3, err: 'vcu-sync: no delivery 99\n' });
    expect((await cli('redrive', undefined)).code).toBe(64);
    expect(await cli('retry', '6')).toMatchObject({ code: 0 });
    expect(await cli('redrive', undefined, { since: '2026-03-01T00:00:00Z' })).toMatchObject({
      code: 0,
      out: expect.stringContaining('"redriven": 0'),
    });
    expect(existsSync(path.dirname(neverDb))).toBe(false);
  });
});
