/**
 * One HTTP request through node:http: every call vcu-sync makes to the operator (its lists, single
 * reads and `/notify`) and the subscribers' deliveries. got used to carry the operator's reads; it
 * cost about 300 µs of CPU per request more than node:http (its stream, hooks and option merging)
 * and, loaded, ~18 MB of a one-shot `vcu-sync sync`'s resident memory (http2, a DNS cache, its
 * dependencies; `npm run bench -- --only rss`), for features the loops never use.
 *
 * What got gave and this keeps: a connect timeout (lookup and connect), a bound on the whole
 * exchange or on each silence of the socket, no redirect followed, no retry (the loops own them),
 * the caller's abort, and a compressed answer inflated before it is counted (gzip, deflate, br: the
 * limits count decompressed bytes).
 */
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';

/** How long a request may take: the whole exchange, or each silence of the socket. */
export type RequestTimeout =
  /** Head and body within `ms` in all: single reads, /notify, deliveries. */
  | { kind: 'whole'; ms: number }
  /** No more than `ms` without a byte, however long the body: list bodies, which may be large. */
  | { kind: 'idle'; ms: number };

/** What {@link sendRequest} needs for one request. */
export interface HttpRequest {
  method: 'GET' | 'POST';
  url: string;
  /** The body of a POST (default: none). */
  body?: string | undefined;
  headers: Record<string, string>;
  agents: { http: http.Agent; https: https.Agent };
  /** Bound on DNS lookup plus TCP (and TLS) connect, ms. */
  connectTimeoutMs: number;
  timeout: RequestTimeout;
  signal?: AbortSignal | undefined;
}

/** An answer's head; `body` is the (inflated) body, to be read or destroyed by the caller. */
export interface HttpAnswer {
  response: http.IncomingMessage;
  body: Readable;
  /**
   * Clears the timers and the abort listener. The body's end or close calls it too; a caller that
   * reads the body to the end within a `finally` may call it again.
   */
  done(): void;
}

/** A timeout shaped as got's was (`name`, `code`, `event`), so errorForNetwork reads one shape. */
function timeoutError(event: 'connect' | 'request' | 'socket', ms: number): Error {
  return Object.assign(new Error(`Timeout awaiting '${event}' for ${ms}ms`), {
    name: 'TimeoutError',
    code: 'ETIMEDOUT',
    event,
  });
}

/** The body as the caller reads it: inflated when the answer says it is compressed. */
function inflated(response: http.IncomingMessage): Readable {
  const encoding = String(response.headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  const inflate =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? zlib.createGunzip()
      : encoding === 'deflate'
        ? zlib.createInflate()
        : encoding === 'br'
          ? zlib.createBrotliDecompress()
          : undefined;
  if (!inflate) return response;
  response.on('error', (err) => inflate.destroy(err));
  inflate.on('close', () => response.destroy());
  return response.pipe(inflate);
}

/** Sends the request; resolves with the answer's head, rejects on a network failure, timeout or abort. */
export function sendRequest(request: HttpRequest): Promise<HttpAnswer> {
  const secure = request.url.startsWith('https:');
  const transport = secure ? https : http;
  return new Promise<HttpAnswer>((resolve, reject) => {
    const signal = request.signal;
    if (signal?.aborted) {
      reject(signal.reason ?? new Error('aborted'));
      return;
    }
    let settled = false;
    let connectTimer: NodeJS.Timeout | undefined;
    let wholeTimer: NodeJS.Timeout | undefined;
    const headers =
      request.body === undefined
        ? request.headers
        : { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) };
    const req = transport.request(request.url, {
      method: request.method,
      agent: secure ? request.agents.https : request.agents.http,
      headers,
    });
    const fail = (err: Error) => req.destroy(err);
    const { timeout } = request;
    if (timeout.kind === 'whole')
      wholeTimer = setTimeout(() => fail(timeoutError('request', timeout.ms)), timeout.ms);
    // The socket's own idle timer: nothing is reset per chunk, and a kept-alive socket given back
    // to the agent gets the agent's timeout again (node:http's Agent does that on free).
    else req.setTimeout(timeout.ms, () => fail(timeoutError('socket', timeout.ms)));
    const onAbort = () => fail(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal?.addEventListener('abort', onAbort, { once: true });
    let cleared = false;
    const done = () => {
      if (cleared) return;
      cleared = true;
      clearTimeout(wholeTimer);
      clearTimeout(connectTimer);
      signal?.removeEventListener('abort', onAbort);
    };
    req.once('socket', (socket) => {
      // A kept-alive socket is already connected; a new one gets the connect bound.
      if (!socket.connecting) return;
      connectTimer = setTimeout(
        () => fail(timeoutError('connect', request.connectTimeoutMs)),
        request.connectTimeoutMs,
      );
      socket.once(secure ? 'secureConnect' : 'connect', () => clearTimeout(connectTimer));
    });
    req.on('error', (err) => {
      done();
      if (!settled) {
        settled = true;
        reject(err);
      }
    });
    req.once('response', (response) => {
      settled = true;
      // Errors after the head (a cut body, a timeout) reach the body's reader.
      req.on('error', (err) => response.destroy(err));
      const body = inflated(response);
      body.once('end', done);
      body.once('close', done);
      resolve({ response, body, done });
    });
    req.end(request.body);
  });
}
