import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cursorKeyFor, signedCursor } from '../../src/api/pageCursor.js';
import { tokenization } from '../outbox/fixtures.js';
import { startApi, TOKEN } from './apiHarness.js';

let h: Awaited<ReturnType<typeof startApi>>;
beforeAll(async () => {
  h = await startApi();
});
afterAll(async () => {
  await h.close();
});

const LISTS = [
  '/v1/projects',
  '/v1/issuances',
  '/v1/units',
  '/v1/custody/projects',
  '/v1/custody/issuances',
  '/v1/custody/units',
];
const cursorOf = (json: string) => Buffer.from(json).toString('base64url');
/** Signed as the harness's API signs: forged contents behind a good MAC still meet the shape check. */
const signedOf = (json: string) => signedCursor(cursorOf(json), cursorKeyFor(TOKEN));
const stored = (pattern: string) =>
  h.ctx.database.sqlite
    .prepare('SELECT count(*) AS n FROM outbox WHERE marketplaceTransactionRef LIKE ?')
    .get(pattern) as { n: number };

describe('forged cursors are a 400 naming cursor, never a 500', () => {
  const forged = [
    '{"k":true}',
    '{"k":false}',
    '{"k":{}}',
    '{"k":{"a":1}}',
    '{"k":[]}',
    '{"k":["x"]}',
    '{"k":null}',
    '{"k":5}',
    '{}',
    '{"k":"x","extra":1}',
    '{"__proto__":{"k":"x"}}',
    '[]',
    '["k"]',
    '"k"',
    '5',
    'true',
    'null',
    'not json',
  ];

  it.each(LISTS)('%s', async (path) => {
    for (const cursor of [...forged.map(signedOf), ...forged.map(cursorOf), '!!!', '%', '.', 'a.b']) {
      const res = await h.call('GET', `${path}?cursor=${encodeURIComponent(cursor)}`);
      expect(res.status, `${path} cursor ${Buffer.from(cursor, 'base64url').toString()}`).toBe(400);
      expect(res.json.error).toMatch(/^cursor: /);
    }
    // A signed cursor of the right shape is still a cursor (the page after "x").
    expect((await h.call('GET', `${path}?cursor=${signedOf('{"k":"x"}')}`)).status).toBe(200);
  });

  it('/v1/operations takes only its own nextCursor', async () => {
    for (const cursor of ['true', '{}', '[]', '1.5', '-1', '0x10', ' 5', cursorOf('{"k":true}')]) {
      const res = await h.call('GET', `/v1/operations?cursor=${encodeURIComponent(cursor)}`);
      expect(res.status, cursor).toBe(400);
      expect(res.json.error).toMatch(/cursor/);
    }
  });
});

describe('__proto__, constructor and prototype keys are refused by name', () => {
  const cases: Array<[string, string, string]> = [
    ['{"__proto__":{"marketplaceId":"mk-OTHER"}}', '__proto__', 'top-level __proto__'],
    ['{"constructor":{"prototype":{"marketplaceId":"mk-OTHER"}}}', 'constructor', 'top-level constructor'],
    ['{"prototype":{"marketplaceId":"mk-OTHER"}}', 'prototype', 'top-level prototype'],
    ['{"__proto__":{"__proto__":{"marketplaceId":"mk-OTHER"}}}', '__proto__', 'nested twice'],
    ['{"originWallet":{"__proto__":{"marketplaceId":"mk-OTHER"}}}', 'originWallet', 'nested in a field'],
    ['{"originWallet":{"constructor":{"prototype":{"x":1}}}}', 'originWallet', 'constructor nested'],
    ['{"issuanceId":{"prototype":7}}', 'issuanceId', 'prototype nested'],
  ];

  it.each(cases)('%s → 422 naming %s (%s)', async (extra, field) => {
    // Everything else valid: without the key the body would be queued.
    const base = JSON.stringify(tokenization(`proto-${field}`, { marketplaceId: undefined }));
    const body = `${base.slice(0, -1)},${extra.slice(1)}`;
    const res = await h.call('POST', '/v1/operations', body);
    expect(res.status, res.text).toBe(422);
    expect(res.json.errors.map((e: { field: string }) => e.field)).toContain(field);
    expect(stored('proto-%')).toEqual({ n: 0 });
  });

  it('the same body without the key is queued with the configured marketplaceId', async () => {
    const res = await h.call(
      'POST',
      '/v1/operations',
      tokenization('proto-ok', { marketplaceId: undefined }),
    );
    expect(res.status).toBe(201);
    const row = h.ctx.database.sqlite
      .prepare("SELECT body FROM outbox WHERE marketplaceTransactionRef = 'proto-ok'")
      .get() as { body: string };
    expect(JSON.parse(row.body).marketplaceId).toBe('mkt-default');
    expect(({} as Record<string, unknown>).marketplaceId).toBeUndefined();
    h.ctx.database.sqlite.prepare("DELETE FROM outbox WHERE marketplaceTransactionRef = 'proto-ok'").run();
  });
});

describe('numbers are plain decimal integers, dates real dates', () => {
  const LENIENT = [
    '0x10',
    '0b11',
    '0o7',
    ' 5',
    '5 ',
    '',
    '+5',
    '-5',
    '1e3',
    '1.0',
    '05',
    'Infinity',
    'NaN',
    '1_0',
    '１',
  ];
  const NUMERIC: Array<[string, string]> = [
    ['/v1/projects', 'limit'],
    ['/v1/operations', 'limit'],
    ['/v1/changes', 'limit'],
    ['/v1/changes', 'after'],
    ['/v1/issuances', 'projectID'],
    ['/v1/issuances', 'vintage'],
  ];

  it.each(NUMERIC)('%s?%s=', async (path, param) => {
    for (const value of LENIENT) {
      const res = await h.call('GET', `${path}?${new URLSearchParams({ [param]: value })}`);
      expect(res.status, `${param}=${JSON.stringify(value)}`).toBe(400);
      expect(res.json.error).toMatch(new RegExp(`^${param}: `));
    }
    const plain = await h.call('GET', `${path}?${param}=16`);
    expect(plain.status, plain.text).toBe(200);
  });

  it('from/to: only days of the calendar', async () => {
    const BAD = [
      '2023-13-45',
      '2023-02-29',
      '2023-00-10',
      '2023-04-31',
      '2023-1-1',
      '20230101',
      ' 2023-01-01',
      '2023-01-01T00:00:00Z',
      '',
      'yesterday',
    ];
    for (const path of ['/v1/projects', '/v1/issuances', '/v1/units']) {
      for (const param of ['from', 'to']) {
        for (const value of BAD) {
          const res = await h.call('GET', `${path}?${new URLSearchParams({ [param]: value })}`);
          expect(res.status, `${path} ${param}=${JSON.stringify(value)}`).toBe(400);
          expect(res.json.error).toMatch(new RegExp(`^${param}: `));
        }
        expect((await h.call('GET', `${path}?${param}=2024-02-29`)).status).toBe(200);
      }
    }
  });

  it('/openapi.json documents them as integers and dates', async () => {
    const doc = (await h.call('GET', '/openapi.json')).json;
    const params = doc.paths['/v1/issuances'].get.parameters as Array<{
      name: string;
      schema: Record<string, unknown>;
    }>;
    const byName = Object.fromEntries(params.map((p) => [p.name, p.schema]));
    expect(byName.limit).toMatchObject({ type: 'integer', minimum: 1, maximum: 1000 });
    expect(byName.projectID).toMatchObject({ type: 'integer', minimum: 0 });
    expect(byName.from).toMatchObject({ type: 'string', format: 'date' });
  });
});
