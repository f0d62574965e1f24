/** The model of the internal API's rules and the request generators of fuzz.test.ts. */
import fc from 'fast-check';
import { cursorKeyFor, signedCursor } from '../../src/api/pageCursor.js';
import { tokenization, transfer } from '../outbox/fixtures.js';
import { TOKEN } from './apiHarness.js';
import { padJson } from './rawHttp.js';

export const MIB = 1024 * 1024;

// ---- the model: what the API must answer --------------------------------------------------------

export type Auth = 'none' | 'bearer' | 'bearer-wrong' | 'basic' | 'basic-wrong';
export type Origin = 'none' | 'same' | 'foreign' | 'null';
export type Site = 'absent' | 'same-origin' | 'none' | 'same-site' | 'cross-site';
export type Body =
  | { kind: 'none' }
  | { kind: 'valid'; size: number }
  | { kind: 'injected'; key: '__proto__' | 'constructor' | 'prototype'; nested: boolean }
  | { kind: 'json'; text: string }
  | { kind: 'text'; text: string };
export type ParamKind = 'limit' | 'int0' | 'date' | 'text' | 'keyCursor' | 'opCursor' | 'state' | 'removed';

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

export interface FuzzRequest {
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
/** The key the harness's API signs its cursors with (its token's). */
const CURSOR_KEY = cursorKeyFor(TOKEN);
function keyCursor(v: string): boolean {
  const dot = v.indexOf('.');
  // Only a cursor the API could have given out: its MAC is the API's (what is signed, then its shape).
  if (dot < 0 || signedCursor(v.slice(0, dot), CURSOR_KEY) !== v) return false;
  try {
    const c: unknown = JSON.parse(Buffer.from(v.slice(0, dot), 'base64url').toString('utf8'));
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

export function bodyText(b: Body, ref: string): string | undefined {
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
export function expected(req: FuzzRequest, text: string | undefined): number[] {
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
    if (req.contentType !== undefined && /;\s*charset=(?!"?utf-?8"?\s*(;|$))/i.test(req.contentType))
      return [415];
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
/** Forged contents behind a good MAC (a key leaked, a cursor of another version): the shape still counts. */
const SIGNED_FORGED = FORGED.map((payload) => signedCursor(payload, CURSOR_KEY));

const paramValue = (kind: ParamKind): fc.Arbitrary<string> => {
  const valid: Record<ParamKind, fc.Arbitrary<string>> = {
    limit: fc.integer({ min: 1, max: 1000 }).map(String),
    int0: fc.nat({ max: 1_000_000 }).map(String),
    date: fc
      .date({ min: new Date('1990-01-01'), max: new Date('2099-12-31'), noInvalidDate: true })
      .map((d) => d.toISOString().slice(0, 10)),
    text: fc.string({ minLength: 1, maxLength: 12 }),
    keyCursor: fc
      .string({ maxLength: 8 })
      .map((k) => signedCursor(cursorOf(JSON.stringify({ k })), CURSOR_KEY)),
    opCursor: fc.nat({ max: 99_999 }).map(String),
    state: fc.constantFrom(...STATES),
    removed: fc.constantFrom('false', 'true', 'only'),
  };
  return fc.oneof(
    { weight: 3, arbitrary: valid[kind] },
    { weight: 1, arbitrary: fc.constantFrom(...LENIENT) },
    { weight: 1, arbitrary: fc.constantFrom(...BAD_DATES) },
    { weight: 1, arbitrary: fc.constantFrom(...FORGED, ...SIGNED_FORGED) },
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

export const requestArb: fc.Arbitrary<FuzzRequest> = fc
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
      'application/json; charset=utf-16',
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
