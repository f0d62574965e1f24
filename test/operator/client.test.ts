import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OperatorClient } from '../../src/operator/client.js';
import { OperatorError, parseRetryAfter } from '../../src/operator/operatorErrors.js';
import { operatorFailure } from './operatorFailure.js';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A real loopback server whose next answer each test sets. */
let handler: Handler = (_req, res) => res.end('[]');
let lastHeaders: http.IncomingHttpHeaders = {};
let server: http.Server;
let base: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    lastHeaders = req.headers;
    handler(req, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const json =
  (status: number, body: unknown, headers: Record<string, string> = {}): Handler =>
  (_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };

function client(extra: Partial<ConstructorParameters<typeof OperatorClient>[0]> = {}) {
  return new OperatorClient({
    baseUrl: base,
    apiKey: 'k-123456789',
    ratePerSecond: 1000,
    timeoutMs: 2000,
    ...extra,
  });
}

const failure = operatorFailure;

describe('OperatorClient', () => {
  it('sends the apikey header by default and Authorization: Bearer when configured', async () => {
    handler = json(200, [{ projectID: 1 }]);
    const page = await client().list('projects', '/integration/v1/projects', { limit: 10, offset: 0 });
    expect(lastHeaders.apikey).toBe('k-123456789');
    expect(lastHeaders.authorization).toBeUndefined();
    expect(page).toMatchObject({ kind: 'array', records: [{ projectID: 1 }] });
    await client({ auth: 'bearer' }).list('projects', '/integration/v1/projects');
    expect(lastHeaders.authorization).toBe('Bearer k-123456789');
    expect(lastHeaders.apikey).toBeUndefined();
  });

  it('classifies 5xx and 408 as transient, 429 as rate-limited with Retry-After, 401/403 as auth', async () => {
    for (const status of [500, 502, 503, 408]) {
      handler = json(status, { message: 'down' });
      expect((await failure(client().list('p', '/x'))).kind).toBe('transient');
    }
    handler = json(429, { message: 'slow down' }, { 'retry-after': '7' });
    const limited = await failure(client().list('p', '/x'));
    expect(limited).toMatchObject({ kind: 'rate-limited', status: 429, retryAfterMs: 7000 });
    for (const status of [401, 403]) {
      handler = json(status, { message: 'bad key' });
      expect(await failure(client().list('p', '/x'))).toMatchObject({ kind: 'auth', status });
    }
  });

  it("keeps the operator's message on a permanent 4xx", async () => {
    handler = json(422, {
      message: 'transactionAmount must be positive',
      errors: [{ field: 'transactionAmount' }],
    });
    const err = await failure(client().notify('/integration/v1/notify', '{}'));
    expect(err.kind).toBe('permanent');
    expect(err.message).toContain('transactionAmount must be positive');
  });

  it('treats an HTML page or a body that is not JSON as an invalid response', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html><body>Bad gateway</body></html>');
    };
    expect((await failure(client().list('p', '/x'))).kind).toBe('invalid-response');
    handler = (_req, res) => res.end('{"not": "an array"');
    expect((await failure(client().list('p', '/x'))).kind).toBe('invalid-response');
    handler = json(200, { not: 'an array' });
    expect((await failure(client().list('p', '/x'))).message).toMatch(/JSON object where a JSON array/);
  });

  it('turns a reset connection and a silent server into transient errors', async () => {
    handler = (req) => req.socket.destroy();
    expect((await failure(client().list('p', '/x'))).kind).toBe('transient');
    handler = () => {
      // never answers: the response timeout must fire
    };
    const err = await failure(client({ timeoutMs: 200 }).getOne('project', '/x/1'));
    expect(err.kind).toBe('transient');
    expect(err.message).toMatch(/timed out|ETIMEDOUT/);
  });

  it('answers null for a 404 data read and the parsed object otherwise', async () => {
    handler = json(404, { message: 'not in custody' });
    expect(await client().getOne('project', '/integration/v1/projects/9')).toBeNull();
    handler = json(200, { projectID: 9 });
    expect(await client().getOne('project', '/integration/v1/projects/9')).toEqual({ projectID: 9 });
  });

  it('accepts any 2xx from /notify and never retries a POST by itself', async () => {
    let posts = 0;
    handler = (req, res) => {
      posts++;
      req.resume();
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    };
    const result = await client().notify('/integration/v1/notify', '{"a":1}');
    expect(result).toMatchObject({ status: 202, body: '{"ok":true}' });
    handler = (req, res) => {
      posts++;
      req.resume();
      res.writeHead(503);
      res.end();
    };
    posts = 0;
    await failure(client().notify('/integration/v1/notify', '{}'));
    expect(posts).toBe(1);
  });

  it('streams a list body larger than the buffer limit record by record', async () => {
    const count = 20_000;
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('[');
      for (let i = 0; i < count; i++)
        res.write(`${i ? ',' : ''}{"unitsOperationID":"${i}","unitsQuantity":${i}}`);
      res.end(']');
    };
    const body = await client({ bufferLimitBytes: 4096 }).list('units', '/integration/v1/units');
    expect(body.kind).toBe('stream');
    let seen = 0;
    if (body.kind === 'stream') {
      for await (const record of body.records) {
        expect((record as { unitsOperationID: string }).unitsOperationID).toBe(String(seen));
        seen++;
      }
    }
    expect(seen).toBe(count);
  });

  it('fails a streamed body that breaks off mid-way', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(`[${Array.from({ length: 2000 }, (_, i) => `{"id":${i}}`).join(',')},{"id":`);
      setImmediate(() => res.socket?.destroy());
    };
    const body = await client({ bufferLimitBytes: 1024 }).list('units', '/x');
    expect(body.kind).toBe('stream');
    const drain = async () => {
      if (body.kind === 'stream') for await (const _ of body.records) void _;
    };
    await expect(drain()).rejects.toBeInstanceOf(OperatorError);
  });

  it('bounds a list body by silence, not by length: a slow body ends, a stalled one times out', async () => {
    // Each record arrives 40 ms after the last: 25 of them take a second, twice the timeout, and no
    // gap is near it. A bound on the whole exchange (the single reads' bound) would cut this body.
    const trickled = (records: number, stallAfter?: number): Handler => {
      return (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('[');
        let i = 0;
        const next = () => {
          if (i === stallAfter) return; // the operator goes silent, socket open
          if (i === records) return void res.end(']');
          res.write(`${i ? ',' : ''}{"id":${i}}`);
          i++;
          setTimeout(next, 40);
        };
        next();
      };
    };
    const records = async (body: Awaited<ReturnType<OperatorClient['list']>>) => {
      const seen: unknown[] = [];
      if (body.kind === 'stream') for await (const r of body.records) seen.push(r);
      else seen.push(...body.records);
      return seen;
    };
    const slowClient = client({ timeoutMs: 500, bufferLimitBytes: 64 });
    handler = trickled(25);
    const slow = await records(await slowClient.list('units', '/x'));
    expect(slow).toHaveLength(25);
    expect(slow.at(-1)).toEqual({ id: 24 });

    handler = trickled(25, 5);
    const stalled = await failure(
      (async () => records(await client({ timeoutMs: 500, bufferLimitBytes: 64 }).list('units', '/x')))(),
    );
    expect(stalled.kind).toBe('transient');
    // Ended by the silence (500 ms after the fifth record), named as the socket's timeout.
    expect(stalled.message).toMatch(/broke off.*Timeout awaiting 'socket' for 500ms/);

    // The slow list's socket went back to the pool with no timer of ours on it: it serves the
    // next request, which still answers.
    handler = json(200, [{ id: 'after' }]);
    expect(await records(await slowClient.list('units', '/x'))).toEqual([{ id: 'after' }]);
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates, and ignores garbage', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:10 GMT', now)).toBe(10_000);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});
