import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OperatorClient } from '../../src/operator/client.js';
import { operatorFailure } from './operatorFailure.js';

/**
 * /notify goes through node:http (src/http/httpRequest.ts), not got: what got gave that path is
 * asserted here against a real loopback server: the headers, a compressed answer inflated and
 * bounded, the whole-exchange timeout (before the head and while the body trickles), the caller's
 * abort, kept-alive sockets, and the metrics callback.
 */
type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;
let handler: Handler = (_req, res) => res.end();
let lastHeaders: http.IncomingHttpHeaders = {};
let lastBody = '';
let connections = 0;
let server: http.Server;
let base: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    lastHeaders = req.headers;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      lastBody = Buffer.concat(chunks).toString('utf8');
      handler(req, res);
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const events: Array<{ operation: string; status: number | 'error' }> = [];
function client(extra: Partial<ConstructorParameters<typeof OperatorClient>[0]> = {}) {
  return new OperatorClient({
    baseUrl: base,
    apiKey: 'k-123456789',
    ratePerSecond: 10_000,
    timeoutMs: 2_000,
    onResponse: (e) => events.push(e),
    ...extra,
  });
}

const failure = operatorFailure;

describe('/notify over node:http', () => {
  it('sends the body, its length, the key and the headers got sent; reports the status', async () => {
    handler = (_req, res) => {
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end('{"status":"received"}');
    };
    events.length = 0;
    const body = JSON.stringify({ ref: 'é-unicode', n: 1 });
    const result = await client().notify('/integration/v1/notify', body);
    expect(result).toMatchObject({ status: 202, body: '{"status":"received"}' });
    expect(lastBody).toBe(body);
    expect(lastHeaders['content-length']).toBe(String(Buffer.byteLength(body)));
    expect(lastHeaders).toMatchObject({
      apikey: 'k-123456789',
      'content-type': 'application/json',
      'user-agent': 'vcu-sync',
      accept: 'application/json',
      'accept-encoding': 'gzip, deflate, br',
    });
    expect(events).toEqual([expect.objectContaining({ operation: 'notify', status: 202 })]);
    // Without the key on /notify (operator.auth_on_notify = false), none is sent.
    await client({ authOnNotify: false }).notify('/integration/v1/notify', body);
    expect(lastHeaders.apikey).toBeUndefined();
  });

  it('inflates gzip, deflate and br answers, and bounds what it keeps by decompressed bytes', async () => {
    const text = JSON.stringify({ status: 'received', note: 'x'.repeat(5_000) });
    for (const [encoding, pack] of [
      ['gzip', zlib.gzipSync],
      ['deflate', zlib.deflateSync],
      ['br', zlib.brotliCompressSync],
    ] as const) {
      handler = (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': encoding });
        res.end(pack(Buffer.from(text)));
      };
      expect((await client().notify('/n', '{}')).body, encoding).toBe(text);
    }
    // A 64 MiB answer that compresses to a few kB: cut at the limit, marked.
    const bomb = zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x61));
    handler = (_req, res) => {
      res.writeHead(200, { 'content-encoding': 'gzip' });
      res.end(bomb);
    };
    const cut = await client({ maxResponseBytes: 10_000 }).notify('/n', '{}');
    expect(cut.body.startsWith('a'.repeat(10_000))).toBe(true);
    expect(cut.body).toContain('truncated by vcu-sync');
    expect(cut.body.length).toBeLessThan(10_200);
  });

  it('a silent operator and a trickling answer both end at the whole-exchange bound, as transient', async () => {
    events.length = 0;
    handler = () => {
      // never answers
    };
    const silent = await failure(client({ timeoutMs: 150 }).notify('/n', '{}'));
    expect(silent.kind).toBe('transient');
    expect(silent.message).toMatch(/timed out/);
    expect(events).toEqual([expect.objectContaining({ operation: 'notify', status: 'error' })]);
    let timer: NodeJS.Timeout | undefined;
    handler = (_req, res) => {
      res.writeHead(202);
      timer = setInterval(() => res.write('.'), 20);
      res.on('close', () => clearInterval(timer));
    };
    const trickle = await failure(client({ timeoutMs: 200 }).notify('/n', '{}'));
    clearInterval(timer);
    expect(trickle.kind).toBe('transient');
    expect(trickle.message).toMatch(/timed out/);
  });

  it('an error answer is classified with its words, the body masked first', async () => {
    handler = (_req, res) => {
      res.writeHead(422, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: 'bad holder secret-name' }));
    };
    const err = await failure(
      client().notify('/n', '{}', { maskBody: (b) => b.replace('secret-name', '[masked]') }),
    );
    expect(err.status).toBe(422);
    expect(err.kind).toBe('permanent');
    expect(err.message).toContain('[masked]');
    expect(err.message).not.toContain('secret-name');
  });

  it("the caller's abort ends a request in flight; a refused connection is transient", async () => {
    let arrived = () => {};
    const inFlight = new Promise<void>((r) => {
      arrived = r;
    });
    // Never answers: only the abort can end it.
    handler = () => arrived();
    const stop = new AbortController();
    const pending = failure(client({ timeoutMs: 60_000 }).notify('/n', '{}', { signal: stop.signal }));
    await inFlight;
    stop.abort(new Error('stopping'));
    expect((await pending).kind).toBe('transient');
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const refused = await failure(client({ baseUrl: `http://127.0.0.1:${port}` }).notify('/n', '{}'));
    expect(refused.kind).toBe('transient');
    expect(refused.message).toContain('ECONNREFUSED');
  });

  it('keeps sockets alive: 200 sends, 8 at a time, open at most 8 connections', async () => {
    handler = (_req, res) => {
      res.writeHead(202);
      res.end('{}');
    };
    const c = client();
    await c.notify('/n', '{}');
    connections = 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next++ < 200) await c.notify('/n', '{}');
      }),
    );
    expect(connections).toBeLessThanOrEqual(8);
    c.close();
  });
});
