import { getEventListeners } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OperatorClient } from '../../src/operator/client.js';
import { SubscriberSender } from '../../src/subscribers/send.js';

/**
 * A daemon hands every request the same long-lived signal (the dispatcher's stop, a sync run's
 * cancel). Each request must leave it as it found it: got alone leaves a listener per request on
 * it (memory without bound, and each addEventListener slower than the last).
 */
let answer: (req: http.IncomingMessage, res: http.ServerResponse) => void = (_req, res) => res.end('[]');
let server: http.Server;
let base: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => answer(req, res));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const listeners = (signal: AbortSignal) => getEventListeners(signal, 'abort').length;
const client = () =>
  new OperatorClient({ baseUrl: base, apiKey: 'k-123456789', ratePerSecond: 100_000, timeoutMs: 2000 });

describe('requests leave the caller signal without listeners', () => {
  it('after many /notify sends, list pages, single reads, error answers and bodies cut short', async () => {
    const stop = new AbortController();
    const c = client();
    answer = (_req, res) => {
      res.writeHead(202, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    };
    for (let i = 0; i < 50; i++) await c.notify('/notify', '{"a":1}', { signal: stop.signal });
    answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('[{"projectID":"p1"}]');
    };
    for (let i = 0; i < 20; i++)
      await c.list('projects', '/projects', { limit: 10, offset: 0 }, { signal: stop.signal });
    answer = (_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end('{"error":"down"}');
    };
    for (let i = 0; i < 10; i++) {
      await expect(c.notify('/notify', '{"a":1}', { signal: stop.signal })).rejects.toThrow();
    }
    expect(listeners(stop.signal)).toBe(0);
  });

  it('still cancels a request in flight when the caller aborts', async () => {
    const stop = new AbortController();
    answer = () => {
      // Never answers: only the caller's abort ends this request.
      stop.abort();
    };
    await expect(client().notify('/notify', '{"a":1}', { signal: stop.signal })).rejects.toThrow();
    expect(listeners(stop.signal)).toBe(0);
  });

  it('after many subscriber deliveries, answered or refused', async () => {
    const stop = new AbortController();
    const sender = new SubscriberSender({ timeoutMs: 2000, connectTimeoutMs: 2000 });
    const sub = {
      key: 'app',
      url: `${base}/hook`,
      secret: `whsec_${Buffer.from('k'.repeat(32)).toString('base64')}`,
      events: [],
    };
    try {
      for (const status of [204, 503]) {
        answer = (_req, res) => {
          res.writeHead(status);
          res.end();
        };
        for (let i = 0; i < 20; i++) {
          const outcome = await sender.send(
            sub,
            { webhookId: `msg_${i}`, body: '{}' },
            Date.now(),
            stop.signal,
          );
          expect(outcome).toMatchObject({ kind: 'answered', status });
        }
      }
      expect(listeners(stop.signal)).toBe(0);
    } finally {
      sender.close();
    }
  });
});
