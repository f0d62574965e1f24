import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What stands in front of the replicas' webhook listeners in a deployment of two: a load balancer.
 * The simulator sends every decision to one URL (this one); each request goes to the replicas in
 * turn, and to the next one when a replica cannot be connected to (it is down: SIGKILLed and not
 * yet back). An answer, whatever its status, is passed back as it is: a 503 from a replica whose
 * database is away is the operator's cue to retry, not the balancer's.
 */

/** A running balancer. */
export interface Balancer {
  url: string;
  /** Requests forwarded per target index, for the report. */
  forwarded: number[];
  close(): Promise<void>;
}

/** Headers passed on: the body's type and the Standard Webhooks signature headers. */
const FORWARDED_HEADERS = ['content-type', 'webhook-id', 'webhook-timestamp', 'webhook-signature'];

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Starts a balancer on loopback over `targets` (base URLs now, read per request; the request's path
 * is appended).
 */
export async function startBalancer(targetsNow: () => readonly string[]): Promise<Balancer> {
  let turn = 0;
  const forwarded: number[] = [];
  const forward = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readBody(req);
    const headers: Record<string, string> = {};
    for (const name of FORWARDED_HEADERS) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const targets = targetsNow();
    const first = turn++ % targets.length;
    for (let k = 0; k < targets.length; k++) {
      const target = (first + k) % targets.length;
      let answer: Response;
      try {
        answer = await fetch(`${targets[target]}${req.url ?? '/'}`, {
          method: req.method ?? 'POST',
          headers,
          body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body,
          signal: AbortSignal.timeout(30_000),
        });
      } catch {
        continue; // Not reachable (or no answer): the next replica.
      }
      forwarded[target] = (forwarded[target] ?? 0) + 1;
      const text = Buffer.from(await answer.arrayBuffer());
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'text/plain' });
      res.end(text);
      return;
    }
    res.writeHead(502, { 'content-type': 'text/plain' });
    res.end('no replica reachable');
  };
  const server = createServer((req, res) => {
    forward(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    forwarded,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
