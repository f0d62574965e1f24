/**
 * One POST through node:http, for `/notify` and the subscribers' deliveries: the hot paths of the
 * outbox's drain and of the deliveries. got costs about 300 µs of CPU per request more than
 * node:http on these paths (its stream, hooks and option merging), as much as the rest of a send;
 * the operator's lists and single reads keep got (streamed bodies, idle timeouts), where a
 * request's overhead is spread over a page.
 *
 * What got gave this request and this keeps: a connect timeout (lookup and connect), one bound on
 * the whole exchange, no redirect followed, no retry, the caller's abort, and a compressed answer
 * inflated before it is counted (gzip, deflate, br: the limits count decompressed bytes).
 */
import http from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';

/** What {@link post} needs for one request. */
export interface PostRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  agents: { http: http.Agent; https: https.Agent };
  /** Bound on DNS lookup plus TCP (and TLS) connect, ms. */
  connectTimeoutMs: number;
  /** Bound on the whole exchange, the answer's body included, ms. */
  timeoutMs: number;
  signal?: AbortSignal | undefined;
}

/** An answer's head; `body` is the (inflated) body, to be read by the caller before `done`. */
export interface PostAnswer {
  response: http.IncomingMessage;
  body: Readable;
  /** Clears the timers and the abort listener: call once the body is read or dropped. */
  done(): void;
}

/** A timeout shaped as got's (`name`, `code`, `event`), so errorForNetwork classifies both alike. */
function timeoutError(event: 'connect' | 'request', ms: number): Error {
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

/** Sends the POST; resolves with the answer's head, rejects on a network failure, timeout or abort. */
export function post(request: PostRequest): Promise<PostAnswer> {
  const secure = request.url.startsWith('https:');
  const transport = secure ? https : http;
  return new Promise<PostAnswer>((resolve, reject) => {
    const signal = request.signal;
    if (signal?.aborted) {
      reject(signal.reason ?? new Error('aborted'));
      return;
    }
    let settled = false;
    let connectTimer: NodeJS.Timeout | undefined;
    const req = transport.request(request.url, {
      method: 'POST',
      agent: secure ? request.agents.https : request.agents.http,
      headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
    });
    const fail = (err: Error) => req.destroy(err);
    const wholeTimer = setTimeout(() => fail(timeoutError('request', request.timeoutMs)), request.timeoutMs);
    const onAbort = () => fail(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => {
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
      // Errors after the head (a cut body, the whole bound) reach the body's reader.
      req.on('error', (err) => response.destroy(err));
      resolve({ response, body: inflated(response), done });
    });
    req.end(request.body);
  });
}
