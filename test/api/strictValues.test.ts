/**
 * Issue 25, item 10: request values are read strictly, on the real listener. An id with spaces or
 * leading zeros, a body declared in a charset other than UTF-8, and a cursor the API never gave out
 * are each a clear 4xx naming what was wrong, and nothing is stored for them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSync } from '../../src/mirror/syncRun.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { apiCaller } from '../helpers/http.js';
import { sqliteApiComponent } from '../helpers/sqliteApi.js';
import { tokenization } from '../outbox/fixtures.js';
import { startApi, TOKEN } from './apiHarness.js';

let h: Awaited<ReturnType<typeof startApi>>;
let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ projects: 7 });
  h = await startApi({
    'operator.url': sim.url,
    'operator.api_key': 'sim-api-key',
    'operator.rate_per_second': 100_000,
  });
  const outcome = await runSync(h.ctx, 'projects', { backend: sqliteBackend(h.ctx.database.sqlite) });
  expect(outcome.status, outcome.error ?? '').toBe('succeeded');
});
afterAll(async () => {
  await h.close();
  await sim.close();
});

const storedRefs = (ref: string) =>
  (
    h.ctx.database.sqlite
      .prepare('SELECT count(*) AS n FROM outbox WHERE marketplaceTransactionRef = ?')
      .get(ref) as { n: number }
  ).n;

describe('ids are numbers or plain decimal digits', () => {
  it.each([
    ['unitId', ' 5'],
    ['unitId', '5 '],
    ['unitId', '05'],
    ['issuanceId', '007'],
    ['issuanceId', ' 7 '],
    ['unitsAccountDestinationID', '+3'],
  ])('%s %j → 422 naming the field, nothing queued', async (field, value) => {
    const ref = `strict-${field}-${Buffer.from(value).toString('hex')}`;
    const res = await h.call('POST', '/v1/operations', tokenization(ref, { [field]: value }));
    expect(res.status, res.text).toBe(422);
    const errors = res.json.errors as Array<{ field: string; reason: string }>;
    expect(errors).toEqual([{ field, reason: expect.stringMatching(/leading zeros/) }]);
    // The value is never quoted back (it may be anything a client sent).
    expect(res.text).not.toContain(JSON.stringify(value));
    expect(storedRefs(ref)).toBe(0);
  });

  it('"5" and 5 are the same id, and "0" is zero', async () => {
    for (const [ref, unitId] of [
      ['strict-digits', '5'],
      ['strict-number', 5],
      ['strict-zero', '0'],
    ] as const) {
      const res = await h.call('POST', '/v1/operations', tokenization(ref, { unitId }));
      expect(res.status, res.text).toBe(201);
      const row = h.ctx.database.sqlite
        .prepare('SELECT body FROM outbox WHERE marketplaceTransactionRef = ?')
        .get(ref) as { body: string };
      expect(JSON.parse(row.body).unitId).toBe(Number(unitId));
    }
  });
});

describe('bodies are UTF-8', () => {
  const post = (contentType: string, body: Buffer) =>
    fetch(`${h.base}/v1/operations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': contentType },
      body,
    });

  it.each([
    ['application/json; charset=utf-16', 'utf-16le'],
    ['application/json; charset="UTF-16"', 'utf-16le'],
    ['application/json;charset=iso-8859-1', 'latin1'],
    ['application/json; charset=us-ascii', 'ascii'],
  ] as const)('%s → 415 naming the charset, nothing queued', async (type, encoding) => {
    const ref = `charset-${encoding}`;
    const res = await post(type, Buffer.from(JSON.stringify(tokenization(ref)), encoding));
    expect(res.status).toBe(415);
    const { error } = (await res.json()) as { error: string };
    expect(error).toMatch(/^charset "[^"]+" is not accepted: send the JSON body as UTF-8/);
    expect(storedRefs(ref)).toBe(0);
  });

  it.each([
    'application/json; charset=utf-8',
    'application/json; charset=UTF-8',
    'application/json; charset="utf-8"',
    'application/json; charset=utf8',
    'application/json',
  ])('%s is read', async (type) => {
    const ref = `charset-ok-${Buffer.from(type).toString('hex').slice(-24)}`;
    const res = await post(type, Buffer.from(JSON.stringify(tokenization(ref)), 'utf8'));
    expect(res.status, await res.text()).toBe(201);
    expect(storedRefs(ref)).toBe(1);
  });
});

describe('a cursor is one the API gave out', () => {
  const page = async (cursor?: string, call = h.call) => {
    const res = await call(
      'GET',
      `/v1/projects?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    return res;
  };
  const keysOf = (res: { json: { items: Array<{ projectID: string }> } }) =>
    res.json.items.map((p) => p.projectID);

  it('an issued cursor gives the next page; the same contents built by hand are a 400', async () => {
    const first = await page();
    expect(first.status).toBe(200);
    const next = first.json.next as string;
    expect(next).toEqual(expect.any(String));
    const second = await page(next);
    expect(second.status).toBe(200);
    expect(keysOf(second)).toHaveLength(3);
    expect(keysOf(second)).not.toContain(keysOf(first)[2]);

    // Well-formed (the very payload the API put in it), but never issued: no MAC, a made-up one,
    // the MAC of another cursor, or the payload changed under a real MAC.
    const [payload, mac] = next.split('.') as [string, string];
    const lastKey = keysOf(first)[2]!;
    const otherPayload = Buffer.from(JSON.stringify({ k: `${lastKey}0` })).toString('base64url');
    const secondMac = (second.json.next as string).split('.')[1]!;
    for (const forged of [
      payload,
      `${payload}.`,
      `${payload}.${Buffer.alloc(16).toString('base64url')}`,
      `${payload}.${secondMac}`,
      `${otherPayload}.${mac}`,
      `${payload}.${mac}A`,
    ]) {
      const res = await page(forged);
      expect(res.status, forged).toBe(400);
      expect(res.json.error).toBe('cursor: not a cursor this API gave out');
    }
  });

  it('an issued cursor stays valid across a restart; another token does not accept it', async () => {
    const next = (await page()).json.next as string;
    const expected = keysOf(await page(next));

    const restarted = sqliteApiComponent(h.ctx);
    await restarted.start();
    try {
      const call = apiCaller(`http://127.0.0.1:${restarted.address()!.port}`, TOKEN);
      const res = await page(next, call);
      expect(res.status).toBe(200);
      expect(keysOf(res)).toEqual(expected);
    } finally {
      await restarted.stop();
    }

    const otherToken = 'another-api-token-0123456789';
    const other = await startApi({ 'api.token': otherToken });
    try {
      const res = await page(next, apiCaller(other.base, otherToken));
      expect(res.status).toBe(400);
      expect(res.json.error).toMatch(/^cursor: /);
    } finally {
      await other.close();
    }
  });
});
