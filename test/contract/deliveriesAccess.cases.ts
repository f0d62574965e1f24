import { existsSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDeliveriesCli } from '../../src/commands/deliveries.js';
import type { ManualClock } from '../../src/common/clock.js';
import type { Config } from '../../src/config/config.js';
import type { apiCaller } from '../helpers/http.js';

/**
 * `/v1/deliveries` and `vcu-sync deliveries`, the same cases on SQLite (deliveriesAccess.sqlite.test.ts)
 * and PostgreSQL (deliveriesAccess.pg.test.ts): the same rows written, then the same requests and
 * commands in the same order. PostgreSQL's half also asks SQLite each time and compares the answers
 * (times the CLI takes from its own clock masked); its CLI runs through the real entry from
 * `database.url`, with no SQLite file made.
 */

export const TOKEN = 'test-api-token-0123456789';
export const T0 = Date.parse('2026-03-01T12:00:00.000Z');

/** Rows valid SQL on both dialects (ISO text is a timestamptz literal on PostgreSQL). */
export const ROWS = `INSERT INTO deliveries (subscriber, event_type, ref, webhook_id, body, state, attempts, next_attempt_at,
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

/** One store's API and the configuration its CLI runs with. */
export interface AccessSide {
  call: ReturnType<typeof apiCaller>;
  config: Config;
}

/** The store under test, with the rows above written, and the clock of its API's context. */
export interface AccessUnderTest {
  clock: ManualClock;
  side: AccessSide;
  /** Another store that must answer every request and command the same. */
  reference?: AccessSide;
  /** A path the CLI must not create (PostgreSQL's: the SQLite file of its configuration). */
  untouched?: string;
  close(): Promise<void>;
}

/** Registers the cases on the store `name`; `open` gives the suite its store. */
export function deliveriesAccessCases(name: string, open: () => Promise<AccessUnderTest>): void {
  describe(`deliveries routes and CLI on ${name}`, () => {
    let store: AccessUnderTest;
    beforeAll(async () => {
      store = await open();
    });
    afterAll(async () => {
      await store?.close();
    });
    /** The reference (if any) first, then the store under test. */
    const sides = () => (store.reference ? [store.reference, store.side] : [store.side]);

    /** The same request on each side: the store under test's answer, after checking it is the reference's. */
    async function both(method: string, url: string, body?: unknown) {
      const answers = [];
      for (const side of sides()) {
        const a = await side.call(method, url, body);
        answers.push({ status: a.status, text: a.text });
      }
      if (answers.length > 1) expect(answers[1]).toEqual(answers[0]);
      const answer = answers.at(-1)!;
      return { status: answer.status, json: JSON.parse(answer.text) as Record<string, unknown> };
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
      store.clock.advance(1000);
      const dead = await both('POST', '/v1/deliveries/2/retry');
      expect(dead).toMatchObject({
        status: 200,
        json: {
          id: 2,
          state: 'pending',
          attempts: 0,
          nextAttemptAt: '2026-03-01T12:00:01.000Z',
          deadAt: null,
        },
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
      store.clock.advance(1000);
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

    it('vcu-sync deliveries: the same output and exit codes (on PostgreSQL from database.url, without a SQLite file)', async () => {
      const TIME = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g;
      async function cli(
        action: string,
        id: string | undefined,
        opts: Record<string, string | boolean> = {},
      ) {
        const answers = [];
        for (const side of sides()) {
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
          const code = await runDeliveriesCli(side.config, action, id, { ...opts, stdout, stderr });
          answers.push({ code, out: out.replace(TIME, '<time>'), err });
        }
        // The store under test's answer, after checking it is the reference's.
        if (answers.length > 1) expect(answers[1]).toEqual(answers[0]);
        return answers.at(-1)!;
      }
      const list = await cli('list', undefined);
      expect(list.code).toBe(0);
      expect(list.out.split('\n')[0]).toMatch(/^ID\s+SUBSCRIBER\s+EVENT/);
      expect(list.out.split('\n').filter((l) => /^\d/.test(l))).toHaveLength(6);
      const dead = await cli('list', undefined, { json: true, state: 'pending', subscriber: 'b' });
      expect((JSON.parse(dead.out) as { items: Array<{ id: number }> }).items.map((i) => i.id)).toEqual([
        3, 6,
      ]);
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
      if (store.untouched) expect(existsSync(store.untouched)).toBe(false);
    });
  });
}
