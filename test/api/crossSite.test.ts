import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenization } from '../outbox/fixtures.js';
import { startApi, TOKEN } from './apiHarness.js';
import { type RawAnswer, type RawRequest, rawRequest } from './rawHttp.js';

let h: Awaited<ReturnType<typeof startApi>>;
beforeAll(async () => {
  h = await startApi();
});
afterAll(async () => {
  await h.close();
});

const BEARER = `Bearer ${TOKEN}`;
const basic = (password: string) => `Basic ${Buffer.from(`oncall:${password}`).toString('base64')}`;
const JSON_TYPE = 'application/json';

async function send(req: RawRequest): Promise<Extract<RawAnswer, { kind: 'answer' }>> {
  const res = await rawRequest(h.base, req);
  if (res.kind !== 'answer') throw new Error(`${req.method} ${req.path}: ${res.kind}`);
  return res;
}
const queued = (ref: string) =>
  (
    h.ctx.database.sqlite
      .prepare('SELECT count(*) AS n FROM outbox WHERE marketplaceTransactionRef = ?')
      .get(ref) as { n: number }
  ).n;
const stateOf = (ref: string) =>
  (
    h.ctx.database.sqlite
      .prepare('SELECT state FROM outbox WHERE marketplaceTransactionRef = ?')
      .get(ref) as {
      state: string;
    }
  ).state;

function enqueue(ref: string, headers: Record<string, string>, body = JSON.stringify(tokenization(ref))) {
  return send({ method: 'POST', path: '/v1/operations', headers, body });
}

describe('state-changing routes take only JSON', () => {
  it.each([
    ['text/plain', 'text/plain'],
    ['text/plain with charset', 'text/plain;charset=UTF-8'],
    ['form-urlencoded', 'application/x-www-form-urlencoded'],
    ['multipart', 'multipart/form-data; boundary=x'],
    ['no content type', undefined],
  ])('%s → 415, nothing queued', async (label, type) => {
    const ref = `ctype-${label.replace(/\W+/g, '-')}`;
    const headers: Record<string, string> = { authorization: BEARER };
    if (type) headers['content-type'] = type;
    const res = await enqueue(ref, headers);
    expect(res.status, res.text).toBe(415);
    expect(res.json.error).toMatch(/content type must be application\/json/);
    expect(queued(ref)).toBe(0);
  });

  it('application/json (with a charset) is queued', async () => {
    const res = await enqueue('ctype-json', {
      authorization: BEARER,
      'content-type': `${JSON_TYPE}; charset=utf-8`,
    });
    expect(res.status, res.text).toBe(201);
    expect(queued('ctype-json')).toBe(1);
  });

  it('a body-less POST needs no content type (curl -X POST); a form one is refused', async () => {
    await enqueue('steer-1', { authorization: BEARER, 'content-type': JSON_TYPE });
    const form = await send({
      method: 'POST',
      path: '/v1/operations/steer-1/cancel',
      headers: { authorization: BEARER, 'content-type': 'application/x-www-form-urlencoded' },
      body: '',
    });
    expect(form.status).toBe(415);
    expect(stateOf('steer-1')).toBe('queued');
    const bare = await send({
      method: 'POST',
      path: '/v1/operations/steer-1/cancel',
      headers: { authorization: BEARER },
    });
    expect(bare.status, bare.text).toBe(200);
    expect(stateOf('steer-1')).toBe('cancelled');
  });
});

describe('state-changing routes refuse other sites', () => {
  const own = () => h.base;
  const port = () => new URL(h.base).port;

  it.each([
    ['another site', () => 'http://evil.example'],
    ['another port', () => `http://127.0.0.1:${Number(port()) + 1}`],
    ['another scheme', () => `https://127.0.0.1:${port()}`],
    ['another name for the host', () => `http://localhost:${port()}`],
    ['the opaque null origin', () => 'null'],
    ['garbage', () => '::not a url::'],
  ])('Origin of %s → 403, nothing queued', async (label, origin) => {
    const ref = `origin-${label.replace(/\W+/g, '-')}`;
    const res = await enqueue(ref, { authorization: BEARER, 'content-type': JSON_TYPE, origin: origin() });
    expect(res.status, res.text).toBe(403);
    expect(res.json.error).toMatch(/cross-site POST refused/);
    expect(queued(ref)).toBe(0);
  });

  it('the API own Origin, or none, is fine', async () => {
    expect(
      (await enqueue('origin-same', { authorization: BEARER, 'content-type': JSON_TYPE, origin: own() }))
        .status,
    ).toBe(201);
    expect((await enqueue('origin-none', { authorization: BEARER, 'content-type': JSON_TYPE })).status).toBe(
      201,
    );
  });

  it.each([
    ['cross-site', 403],
    ['same-site', 403],
    ['same-origin', 201],
    ['none', 201],
  ] as const)('Sec-Fetch-Site: %s → %i', async (site, status) => {
    const ref = `fetch-site-${site}`;
    const res = await enqueue(ref, {
      authorization: BEARER,
      'content-type': JSON_TYPE,
      'sec-fetch-site': site,
    });
    expect(res.status, res.text).toBe(status);
    expect(queued(ref)).toBe(status === 201 ? 1 : 0);
  });

  it('retry, cancel and sync are guarded the same way', async () => {
    await enqueue('steer-2', { authorization: BEARER, 'content-type': JSON_TYPE });
    for (const path of ['/v1/operations/steer-2/cancel', '/v1/operations/steer-2/retry', '/v1/sync/all']) {
      const res = await send({
        method: 'POST',
        path,
        headers: { authorization: BEARER, origin: 'http://evil.example' },
      });
      expect(res.status, path).toBe(403);
    }
    expect(stateOf('steer-2')).toBe('queued');
  });
});

describe('Basic credentials are for reads only', () => {
  it('the reported attack: a cross-site text/plain form POST carrying Basic is refused and nothing is queued', async () => {
    const res = await enqueue('csrf-1', {
      authorization: basic(TOKEN),
      'content-type': 'text/plain',
      origin: 'http://evil.example',
      'sec-fetch-site': 'cross-site',
    });
    expect([401, 403]).toContain(res.status);
    expect(queued('csrf-1')).toBe(0);
  });

  it('Basic with the right token on POST → 403 saying to use Bearer; a wrong one → 401', async () => {
    const right = await enqueue('basic-1', { authorization: basic(TOKEN), 'content-type': JSON_TYPE });
    expect(right.status).toBe(403);
    expect(right.json.error).toMatch(/Basic credentials are accepted for reads only.*Bearer/);
    const wrong = await enqueue('basic-2', {
      authorization: basic('not-the-token'),
      'content-type': JSON_TYPE,
    });
    expect(wrong.status).toBe(401);
    await enqueue('steer-3', { authorization: BEARER, 'content-type': JSON_TYPE });
    const cancel = await send({
      method: 'POST',
      path: '/v1/operations/steer-3/cancel',
      headers: { authorization: basic(TOKEN) },
    });
    expect(cancel.status).toBe(403);
    expect(stateOf('steer-3')).toBe('queued');
    expect(queued('basic-1') + queued('basic-2')).toBe(0);
  });

  it('Basic GET still works: the status page, /status and the lists', async () => {
    for (const path of ['/', '/v1/operations', '/openapi.json']) {
      const res = await send({ method: 'GET', path, headers: { authorization: basic(TOKEN) } });
      expect(res.status, path).toBe(200);
    }
    // 503 is /status saying "critical", still an answer to an authenticated read.
    const status = await send({ method: 'GET', path: '/status', headers: { authorization: basic(TOKEN) } });
    expect([200, 503]).toContain(status.status);
    expect(['ok', 'warning', 'critical']).toContain(status.json.status);
  });
});

describe('/openapi.json says so', () => {
  it('every POST documents 403 and 415 and takes Bearer only; /v1/operations documents 413', async () => {
    const doc = (await send({ method: 'GET', path: '/openapi.json', headers: { authorization: BEARER } }))
      .json;
    for (const [path, methods] of Object.entries(
      doc.paths as Record<string, Record<string, { responses: Record<string, unknown>; security?: unknown }>>,
    )) {
      const post = methods.post;
      if (!post) continue;
      expect(Object.keys(post.responses), path).toEqual(expect.arrayContaining(['401', '403', '415']));
      expect(post.security, path).toEqual([{ bearer: [] }]);
    }
    expect(Object.keys(doc.paths['/v1/operations'].post.responses)).toEqual(
      expect.arrayContaining(['400', '413', '422']),
    );
    expect(doc.components.securitySchemes.basic.description).toMatch(/GET only/);
  });
});
