import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ANSWER_READ_LIMIT, SubscriberSender } from '../../src/subscribers/send.js';
import { SUB_SECRET } from './harness.js';

/** Issue 25 item 8: a subscriber's answer is read up to a small limit, the rest never buffered. */

const GIB = 1024 ** 3;
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * A subscriber that answers `status` with a body of `size` bytes, written as the socket takes it
 * (so what it wrote is what the client's side let through), and counts what it wrote and on how
 * many sockets it was asked.
 */
async function answeringSubscriber(status: number, size: number) {
  const seen = { written: 0, requests: 0, sockets: new Set<unknown>(), closedEarly: false };
  const chunk = Buffer.alloc(64 * 1024, 'x');
  const server = http.createServer((req, res) => {
    seen.requests++;
    seen.sockets.add(req.socket);
    req.resume();
    req.on('end', () => {
      res.writeHead(status, { 'content-length': String(size), 'retry-after': '7' });
      let left = size;
      const pump = () => {
        while (left > 0 && !res.destroyed) {
          const n = Math.min(left, chunk.length);
          left -= n;
          seen.written += n;
          if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
            res.once('drain', pump);
            return;
          }
        }
        if (left === 0) res.end();
      };
      res.on('close', () => {
        if (left > 0) seen.closedEarly = true;
      });
      pump();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return { seen, sub: { key: 'big', url, secret: SUB_SECRET, events: [] } };
}

function sender() {
  const s = new SubscriberSender({ timeoutMs: 30_000, connectTimeoutMs: 5_000 });
  cleanups.push(() => s.close());
  return s;
}

const delivery = { webhookId: 'msg_answer', body: '{"type":"operation.approved"}' };

describe('a subscriber answer', () => {
  it('of 1 GiB is judged by its status; the client stops reading and closes, far short of 1 GiB', async () => {
    const { seen, sub } = await answeringSubscriber(503, GIB);
    const now = Date.now();
    const outcome = await sender().send(sub, delivery, now, new AbortController().signal);
    expect(outcome).toEqual({ kind: 'answered', status: 503, retryAfterMs: 7_000 });
    // Wait for the server to see the socket go (it writes as the client's side lets it through).
    for (let i = 0; i < 100_000 && !seen.closedEarly; i++) await new Promise((r) => setImmediate(r));
    expect(seen.closedEarly).toBe(true);
    // The client read at most 64 KiB; the rest that got through sat in the kernel's socket
    // buffers (tens of MB at most on loopback), never in the process: nowhere near 1 GiB.
    expect(seen.written).toBeLessThan(96 * 1024 * 1024);
  });

  it('within the limit is read to its end, and the keep-alive socket serves the next send', async () => {
    const { seen, sub } = await answeringSubscriber(200, ANSWER_READ_LIMIT);
    const s = sender();
    const signal = new AbortController().signal;
    expect(await s.send(sub, delivery, Date.now(), signal)).toMatchObject({ kind: 'answered', status: 200 });
    expect(await s.send(sub, delivery, Date.now(), signal)).toMatchObject({ kind: 'answered', status: 200 });
    expect(seen.requests).toBe(2);
    expect(seen.sockets.size).toBe(1);
    expect(seen.closedEarly).toBe(false);
  });

  it('a refused connection is an error outcome naming only its kind', async () => {
    const { sub } = await answeringSubscriber(200, 0);
    const closed = { ...sub, url: 'http://127.0.0.1:9/hook' };
    const outcome = await sender().send(closed, delivery, Date.now(), new AbortController().signal);
    expect(outcome).toEqual({ kind: 'error', error: 'request ECONNREFUSED' });
  });
});
