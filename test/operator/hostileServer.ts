/**
 * A hostile operator on loopback: each path answers with a body chosen by the test (endless, a gzip
 * bomb, a trickle, a deep record, a huge /notify answer). Every body stops when the client goes
 * away, and the endless ones are bounded in bytes and time too, so a broken client cannot keep a
 * test running forever. `sent` counts the bytes each path wrote, to show the client stopped early.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';

export type Answer = (req: http.IncomingMessage, res: http.ServerResponse, sent: Counter) => void;

interface Counter {
  add(n: number): void;
}

/** Bounds on what any answer writes, whatever the client does. */
const MAX_BYTES = 3 * 1024 * 1024 * 1024;
const MAX_MS = 60_000;

export interface HostileServer {
  url: string;
  /** Sets the answer of a path (exact match, query ignored); unknown paths answer 404. */
  on(path: string, answer: Answer): void;
  /** Bytes written per path so far (compressed bytes for a compressed answer). */
  sent: Map<string, number>;
  close(): Promise<void>;
}

export async function startHostileServer(): Promise<HostileServer> {
  const answers = new Map<string, Answer>();
  const sent = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const answer = answers.get(path);
    if (!answer) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"message":"not found"}');
      return;
    }
    const counter = { add: (n: number) => sent.set(path, (sent.get(path) ?? 0) + n) };
    req.resume();
    answer(req, res, counter);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    on: (path, answer) => answers.set(path, answer),
    sent,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A JSON answer. */
export function json(body: unknown, status = 200): Answer {
  return (_req, res, sent) => {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json' });
    sent.add(Buffer.byteLength(text));
    res.end(text);
  };
}

/** Writes `next()` chunks with backpressure until it returns null, the client leaves, or a bound. */
async function pump(
  res: http.ServerResponse,
  sent: Counter,
  next: () => Buffer | null,
  paceMs = 0,
): Promise<void> {
  const out = res;
  const started = Date.now();
  let total = 0;
  for (let chunk = next(); chunk !== null; chunk = next()) {
    if (res.destroyed || total > MAX_BYTES || Date.now() - started > MAX_MS) break;
    total += chunk.length;
    sent.add(chunk.length);
    if (paceMs > 0) await new Promise((r) => setTimeout(r, paceMs));
    if (!out.write(chunk)) {
      const drained = await new Promise<boolean>((resolve) => {
        const done = (ok: boolean) => {
          out.removeListener('drain', onDrain);
          res.removeListener('close', onClose);
          resolve(ok);
        };
        const onDrain = () => done(true);
        const onClose = () => done(false);
        out.once('drain', onDrain);
        res.once('close', onClose);
      });
      if (!drained) return;
    }
  }
  if (!res.destroyed) out.end();
}

/**
 * `head`, then `fill(i)` for i = 0, 1, ... up to `fillBytes` in all (Infinity: until the client
 * leaves or a bound), then `tail`; chunked, no Content-Length. `paceMs` waits between chunks (a
 * steady stream that does not eat the machine's CPU).
 */
export function streamed(
  head: string,
  fill: Buffer | ((i: number) => Buffer),
  fillBytes: number,
  tail = '',
  paceMs = 0,
): Answer {
  const nextFill = typeof fill === 'function' ? fill : () => fill;
  return (_req, res, sent) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    let state: 'head' | 'fill' | 'tail' | 'done' = 'head';
    let filled = 0;
    let i = 0;
    void pump(
      res,
      sent,
      () => {
        if (state === 'head') {
          state = 'fill';
          return Buffer.from(head);
        }
        if (state === 'fill' && filled < fillBytes) {
          const chunk = nextFill(i++);
          filled += chunk.length;
          return chunk;
        }
        if (state !== 'done') {
          state = 'done';
          return Buffer.from(tail);
        }
        return null;
      },
      paceMs,
    );
  };
}

/**
 * A gzip bomb: `head`, `inflatedBytes` of '0', then `tail`, compressed. Built from gzip members
 * (a gzip stream may hold several, and Node inflates them all): one 1 MiB member of zeros compresses
 * to about 1 KB, repeated, so 2.2 GB costs the server about 2 MB.
 */
export function gzipBomb(head: string, inflatedBytes: number, tail: string): Answer {
  const zeros = zlib.gzipSync(Buffer.alloc(1024 * 1024, 0x30), { level: 9 });
  const members = Math.ceil(inflatedBytes / (1024 * 1024));
  return (_req, res, sent) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
    let i = -1;
    void pump(res, sent, () => {
      i++;
      if (i === 0) return zlib.gzipSync(head);
      if (i <= members) return zeros;
      if (i === members + 1) return zlib.gzipSync(tail);
      return null;
    });
  };
}

/** `head`, then one `item(i)` every `everyMs`, separated by commas, never closing (bounded in time). */
export function trickle(head: string, item: (i: number) => string, everyMs: number): Answer {
  return (_req, res, sent) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write(head);
    sent.add(head.length);
    const started = Date.now();
    let i = 0;
    const timer = setInterval(() => {
      if (res.destroyed || Date.now() - started > MAX_MS) {
        clearInterval(timer);
        res.destroy();
        return;
      }
      const text = `${i === 0 ? '' : ','}${item(i++)}`;
      sent.add(text.length);
      res.write(text);
    }, everyMs);
    res.once('close', () => clearInterval(timer));
  };
}

/** A valid project record with padding, as the list and the data read spell it. */
export function project(id: number | string, padBytes = 0): string {
  return JSON.stringify({ projectID: String(id), projectName: `Project ${id}`, pad: '0'.repeat(padBytes) });
}
