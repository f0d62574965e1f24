/**
 * Hostile requests against the real API listener over loopback (fast-check). Each request is also
 * run through a model of the API's rules written here, independently of the code: the answer must
 * be the status the model predicts, so a 2xx the rules forbid (a wrong acceptance) fails, as does
 * any 5xx and any request left unanswered.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { createWebhookComponent, WEBHOOK_PATH } from '../../src/inbox/listener.js';
import { testContext } from '../helpers/context.js';
import { decisionPayload, insertOutboxRow, outboxRow, SECRET, signed } from '../inbox/helpers.js';
import { tokenization, transfer } from '../outbox/fixtures.js';
import { startApi, TOKEN } from './apiHarness.js';
import { padJson, rawRequest } from './rawHttp.js';

const MIB = 1024 * 1024;

// ---- the model: what the API must answer --------------------------------------------------------

type Auth = 'none' | 'bearer' | 'bearer-wrong' | 'basic' | 'basic-wrong';
type Origin = 'none' | 'same' | 'foreign' | 'null';
type Site = 'absent' | 'same-origin' | 'none' | 'same-site' | 'cross-site';
type Body =
  | { kind: 'none' }
  | { kind: 'valid'; size: number }
  | { kind: 'injected'; key: '__proto__' | 'constructor' | 'prototype'; nested: boolean }
  | { kind: 'json'; text: string }
  | { kind: 'text'; text: string };
type ParamKind = 'limit' | 'int0' | 'date' | 'text' | 'keyCursor' | 'opCursor' | 'state' | 'removed';

const LISTS: Record<string, Record<string, ParamKind>> = {
  '/v1/projects': {
    limit: 'limit',
    cursor: 'keyCursor',
    status: 'text',
    from: 'date',
    to: 'date',
    removed: 'removed',
  },
  '/v1/issuances': {
    limit: 'limit',
    cursor: 'keyCursor',
    projectID: 'int0',
    vintage: 'int0',
    from: 'date',
    to: 'date',
  },
  '/v1/custody/units': { limit: 'limit', cursor: 'keyCursor' },
  '/v1/changes': { after: 'int0', limit: 'limit', resource: 'text' },
  '/v1/operations': { state: 'state', cursor: 'opCursor', limit: 'limit' },
};
const STATES = ['queued', 'sending', 'accepted', 'approved', 'rejected', 'failed', 'cancelled'];

interface FuzzRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';
  route: 'list' | 'enqueue' | 'cancel' | 'unknown';
  list: string;
  params: Array<[string, string]>;
  auth: Auth;
  contentType: string | undefined;
  origin: Origin;
  site: Site;
  body: Body;
  chunked: boolean;
}

const decimal = (v: string) => /^(0|[1-9][0-9]{0,14})$/.test(v);
function realDate(v: string): boolean {
  if (!/^[0-9]{4}-[0-9]{2}-[0-9]{2}$/.test(v)) return false;
  const d = new Date(`${v}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === v;
}
function keyCursor(v: string): boolean {
  try {
    const c: unknown = JSON.parse(Buffer.from(v, 'base64url').toString('utf8'));
    return (
      typeof c === 'object' &&
      c !== null &&
      !Array.isArray(c) &&
      Object.keys(c).join() === 'k' &&
      typeof (c as { k: unknown }).k === 'string'
    );
  } catch {
    return false;
  }
}
function paramValid(kind: ParamKind, v: string): boolean {
  switch (kind) {
    case 'limit':
      return decimal(v) && Number(v) >= 1 && Number(v) <= 1000;
    case 'int0':
      return decimal(v);
    case 'date':
      return realDate(v);
    case 'text':
      return v.length > 0;
    case 'keyCursor':
      return v.length > 0 && keyCursor(v);
    case 'opCursor':
      return /^[0-9]{1,15}$/.test(v);
    case 'state':
      return STATES.includes(v);
    case 'removed':
      return ['false', 'true', 'only'].includes(v);
  }
}

const isJson = (t: string | undefined) =>
  t !== undefined && /^application\/([a-z0-9.-]+\+)?json\s*(;|$)/i.test(t.trim());

function bodyText(b: Body, ref: string): string | undefined {
  switch (b.kind) {
    case 'none':
      return undefined;
    case 'valid':
      return padJson(JSON.stringify(tokenization(ref)), Math.max(b.size, 400));
    case 'injected': {
      const payload =
        b.key === 'constructor'
          ? '{"prototype":{"marketplaceId":"mk-OTHER"}}'
          : '{"marketplaceId":"mk-OTHER"}';
      const base = JSON.stringify(transfer(ref, { marketplaceId: undefined }));
      if (b.nested) return `${base.slice(0, -1)},"originWallet":{"${b.key}":${payload}}}`;
      return `${base.slice(0, -1)},"${b.key}":${payload}}`;
    }
    case 'json':
    case 'text':
      return b.text;
  }
}

/** The statuses the rules allow for `req` with body `text`. */
function expected(req: FuzzRequest, text: string | undefined): number[] {
  if (req.auth === 'none' || req.auth === 'bearer-wrong' || req.auth === 'basic-wrong') return [401];
  const unsafe = req.method !== 'GET';
  if (unsafe && req.auth === 'basic') return [403];
  const bytes = text === undefined ? 0 : Buffer.byteLength(text);
  if (!req.chunked && bytes > MIB) return [413];
  if (unsafe) {
    if (req.origin === 'foreign' || req.origin === 'null') return [403];
    if (req.site === 'cross-site' || req.site === 'same-site') return [403];
    const hasBody = text !== undefined && (req.chunked || bytes > 0);
    if ((req.contentType !== undefined || hasBody) && !isJson(req.contentType)) return [415];
  }
  // POST on the operations list is the enqueue route.
  const route =
    req.route === 'list' && req.method === 'POST' && req.list === '/v1/operations' ? 'enqueue' : req.route;
  if (route === 'unknown' || (route === 'list' && req.method !== 'GET')) return [404];
  if (route === 'list') {
    if (req.chunked && bytes > MIB) return [200, 400, 413]; // a GET body is never read
    const spec = LISTS[req.list]!;
    const ok = req.params.every(([name, v]) => spec[name] !== undefined && paramValid(spec[name]!, v));
    return [ok ? 200 : 400];
  }
  if (req.method !== 'POST') return [404];
  if (route === 'cancel') return [404]; // unknown ref
  if (bytes > MIB) return [413];
  if (text === undefined || text.trim() === '') return [400];
  if (req.body.kind === 'valid') return [201];
  if (req.body.kind === 'injected') return [422];
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [400];
  }
  return parsed === undefined ? [400] : [422];
}

// ---- generators --------------------------------------------------------------------------------

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
  '1.5',
  '05',
  'Infinity',
  'NaN',
  '1_0',
];
const BAD_DATES = [
  '2023-13-45',
  '2023-02-29',
  '2023-00-01',
  '2023-04-31',
  '2023-1-1',
  '20230101',
  '2023-01-01T00:00:00Z',
];
const cursorOf = (json: string) => Buffer.from(json).toString('base64url');
const FORGED = [
  '{"k":true}',
  '{"k":{}}',
  '{"k":[]}',
  '{"k":null}',
  '{"k":1}',
  '{}',
  '[]',
  'true',
  '{"k":"x","y":1}',
  '{"__proto__":{"k":"x"}}',
].map(cursorOf);

const paramValue = (kind: ParamKind): fc.Arbitrary<string> => {
  const valid: Record<ParamKind, fc.Arbitrary<string>> = {
    limit: fc.integer({ min: 1, max: 1000 }).map(String),
    int0: fc.nat({ max: 1_000_000 }).map(String),
    date: fc
      .date({ min: new Date('1990-01-01'), max: new Date('2099-12-31'), noInvalidDate: true })
      .map((d) => d.toISOString().slice(0, 10)),
    text: fc.string({ minLength: 1, maxLength: 12 }),
    keyCursor: fc.string({ maxLength: 8 }).map((k) => cursorOf(JSON.stringify({ k }))),
    opCursor: fc.nat({ max: 99_999 }).map(String),
    state: fc.constantFrom(...STATES),
    removed: fc.constantFrom('false', 'true', 'only'),
  };
  return fc.oneof(
    { weight: 3, arbitrary: valid[kind] },
    { weight: 1, arbitrary: fc.constantFrom(...LENIENT) },
    { weight: 1, arbitrary: fc.constantFrom(...BAD_DATES) },
    { weight: 1, arbitrary: fc.constantFrom(...FORGED) },
    { weight: 1, arbitrary: fc.string({ maxLength: 10 }) },
  );
};

const listRequest = fc.constantFrom(...Object.keys(LISTS)).chain((list) =>
  fc.record({
    list: fc.constant(list),
    params: fc
      .uniqueArray(
        fc.oneof(
          { weight: 6, arbitrary: fc.constantFrom(...Object.keys(LISTS[list]!)) },
          { weight: 1, arbitrary: fc.constantFrom('colour', 'wait', 'LIMIT') },
        ),
        { maxLength: 4 },
      )
      .chain((names) =>
        fc.tuple(
          ...names.map((n) => paramValue(LISTS[list]![n] ?? 'text').map((v): [string, string] => [n, v])),
        ),
      ),
  }),
);

const bodyArb: fc.Arbitrary<Body> = fc.oneof(
  { weight: 2, arbitrary: fc.constant<Body>({ kind: 'none' }) },
  {
    weight: 4,
    arbitrary: fc
      .oneof(
        { weight: 4, arbitrary: fc.nat({ max: 4096 }) },
        { weight: 2, arbitrary: fc.integer({ min: 100 * 1024, max: MIB }) },
        { weight: 1, arbitrary: fc.integer({ min: MIB - 2, max: MIB + 2 }) },
        { weight: 1, arbitrary: fc.integer({ min: MIB + 1, max: MIB + 200 * 1024 }) },
      )
      .map((size): Body => ({ kind: 'valid', size })),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('injected' as const),
      key: fc.constantFrom('__proto__' as const, 'constructor' as const, 'prototype' as const),
      nested: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.json({ maxDepth: 3 }).map((text): Body => ({ kind: 'json', text })) },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }).map((text): Body => ({ kind: 'text', text })) },
);

const requestArb: fc.Arbitrary<FuzzRequest> = fc
  .record({
    route: fc.constantFrom('list', 'enqueue', 'enqueue', 'cancel', 'unknown') as fc.Arbitrary<
      FuzzRequest['route']
    >,
    method: fc.constantFrom('GET', 'POST', 'POST', 'PUT', 'DELETE', 'PATCH') as fc.Arbitrary<
      FuzzRequest['method']
    >,
    list: listRequest,
    auth: fc.constantFrom<Auth>(
      'bearer',
      'bearer',
      'bearer',
      'bearer',
      'none',
      'bearer-wrong',
      'basic',
      'basic-wrong',
    ),
    contentType: fc.constantFrom(
      'application/json',
      'application/json',
      'application/json; charset=utf-8',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/jsonx',
      undefined,
    ),
    origin: fc.constantFrom<Origin>('none', 'none', 'same', 'foreign', 'null'),
    site: fc.constantFrom<Site>('absent', 'absent', 'same-origin', 'none', 'same-site', 'cross-site'),
    body: bodyArb,
    chunked: fc.boolean(),
  })
  .map(({ list, route, method, ...rest }) => ({
    ...rest,
    route,
    // An enqueue is a POST (other methods there are 404s, covered by the unknown route).
    method: route === 'enqueue' || route === 'cancel' ? 'POST' : method,
    list: list.list,
    params: list.params,
  }));

// ---- the run -----------------------------------------------------------------------------------

describe('fuzz: hostile requests to the internal API', () => {
  let h: Awaited<ReturnType<typeof startApi>>;
  beforeAll(async () => {
    h = await startApi();
  });
  afterAll(async () => {
    await h.close();
  });

  it('every request is answered with the status the rules give; nothing else is queued', async () => {
    let n = 0;
    const accepted = new Set<string>();
    await fc.assert(
      fc.asyncProperty(requestArb, async (req) => {
        const ref = `fuzz-${n++}`;
        const text = bodyText(req.body, ref);
        const query = req.params
          .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
          .join('&');
        const path =
          req.route === 'list'
            ? `${req.list}${query ? `?${query}` : ''}`
            : req.route === 'enqueue'
              ? '/v1/operations'
              : req.route === 'cancel'
                ? `/v1/operations/${ref}/cancel`
                : '/v1/nothing-here';
        const headers: Record<string, string> = {};
        const basic = (p: string) => `Basic ${Buffer.from(`u:${p}`).toString('base64')}`;
        if (req.auth === 'bearer') headers.authorization = `Bearer ${TOKEN}`;
        if (req.auth === 'bearer-wrong') headers.authorization = 'Bearer wrong-token';
        if (req.auth === 'basic') headers.authorization = basic(TOKEN);
        if (req.auth === 'basic-wrong') headers.authorization = basic('wrong');
        if (req.contentType !== undefined) headers['content-type'] = req.contentType;
        if (req.origin === 'same') headers.origin = h.base;
        if (req.origin === 'foreign') headers.origin = 'http://evil.example';
        if (req.origin === 'null') headers.origin = 'null';
        if (req.site !== 'absent') headers['sec-fetch-site'] = req.site;
        const res = await rawRequest(h.base, {
          method: req.method,
          path,
          headers,
          ...(text === undefined ? {} : { body: text }),
          ...(req.chunked && text !== undefined ? { chunkBytes: 64 * 1024 } : {}),
        });
        if (res.kind !== 'answer') throw new Error(`${req.method} ${path}: no answer (${res.kind})`);
        const allowed = expected(req, text);
        expect(
          allowed,
          `${req.method} ${path} ${JSON.stringify({ ...req, body: req.body.kind })}: ${res.text.slice(0, 300)}`,
        ).toContain(res.status);
        if (res.status === 201) accepted.add(ref);
      }),
      { numRuns: 300 },
    );
    // The end state: exactly the accepted refs are queued, each with the configured marketplace id.
    const rows = h.ctx.database.sqlite
      .prepare(
        "SELECT marketplaceTransactionRef AS ref, body FROM outbox WHERE marketplaceTransactionRef LIKE 'fuzz-%'",
      )
      .all() as Array<{ ref: string; body: string }>;
    expect(new Set(rows.map((r) => r.ref))).toEqual(accepted);
    for (const r of rows) expect(JSON.parse(r.body).marketplaceId).toBe('mkt-1');
    expect(({} as Record<string, unknown>).marketplaceId).toBeUndefined();
  }, 120_000);
});

describe('fuzz: body sizes at the webhook listener', () => {
  const NOW = Date.parse('2026-03-01T12:00:00.000Z');
  const LIMIT = 256 * 1024;
  let ctx: ReturnType<typeof testContext>;
  let hook: ReturnType<typeof createWebhookComponent>;

  beforeAll(async () => {
    ctx = testContext({
      clock: new ManualClock(NOW),
      overrides: {
        'webhook.secrets': [SECRET],
        'webhook.listen': '127.0.0.1:0',
        'webhook.max_body_bytes': LIMIT,
      },
    });
    hook = createWebhookComponent(ctx);
    await hook.start();
  });
  afterAll(async () => {
    await hook.stop();
    ctx.dispose();
  });

  it('every size is answered: 200 and the decision applied up to the limit, 413 and nothing past it', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.nat({ max: 8192 }),
          fc.integer({ min: 100 * 1024, max: 2 * LIMIT }),
          fc.integer({ min: LIMIT - 2, max: LIMIT + 2 }),
        ),
        fc.option(fc.integer({ min: 512, max: 128 * 1024 }), { nil: undefined }),
        async (size, chunkBytes) => {
          const ref = `hook-fuzz-${n++}`;
          insertOutboxRow(ctx.database.sqlite, ref, 'accepted');
          const text = padJson(JSON.stringify(decisionPayload(ref, 'approved')), Math.max(size, 200));
          const msg = signed(undefined, { atMs: NOW, body: text });
          const res = await rawRequest(hook.address()!.url, {
            method: 'POST',
            path: WEBHOOK_PATH,
            headers: msg.headers,
            body: text,
            ...(chunkBytes ? { chunkBytes } : {}),
          });
          if (res.kind !== 'answer') throw new Error(`size ${size}: no answer (${res.kind})`);
          const fits = Buffer.byteLength(text) <= LIMIT;
          expect(res.status).toBe(fits ? 200 : 413);
          expect(outboxRow(ctx.database.sqlite, ref).state).toBe(fits ? 'approved' : 'accepted');
        },
      ),
      { numRuns: 60 },
    );
  }, 120_000);
});
