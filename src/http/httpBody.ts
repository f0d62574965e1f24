/**
 * Request bodies of both listeners (internal API and webhooks), read into memory up to a limit and
 * counted while reading: an oversized body is refused as soon as it crosses the limit, never
 * buffered whole first.
 *
 * One reader per body. Under @hono/node-server, touching `c.req.raw.body` attaches a web stream to
 * Node's request that pulls from it and pauses it once its queue is full; a second reader on the
 * same Node stream then waits for an `end` that never comes. That was the 128 KB - 1 MiB hang of
 * `POST /v1/operations` (hono's bodyLimit touched `raw.body`, then the API read Node's stream).
 * So nothing here looks at `raw.body` when Node's request is there to read.
 */
import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';

/** The body's bytes, or why it was refused. */
export type BodyResult =
  | { readonly ok: true; readonly bytes: Buffer }
  | { readonly ok: false; readonly status: 400 | 413; readonly reason: string };

/** Refuses a declared Content-Length above the limit before reading anything. */
export function declaredTooLarge(contentLength: string | undefined, limit: number): boolean {
  if (contentLength === undefined) return false;
  const n = Number(contentLength);
  return Number.isFinite(n) && n > limit;
}

/** application/json, with or without parameters; also `application/<x>+json`. */
export function isJsonContentType(value: string | undefined): boolean {
  if (!value) return false;
  const type = value.split(';', 1)[0]!.trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

/**
 * The `charset` a content type names when it is not UTF-8 (null: none named, or UTF-8). Bodies are
 * read as UTF-8 (RFC 8259 8.1); one declared in another charset must be refused, not misread.
 */
export function foreignCharset(value: string | undefined): string | null {
  if (!value) return null;
  for (const param of value.split(';').slice(1)) {
    const eq = param.indexOf('=');
    if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    const charset = param
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
    if (charset !== 'utf-8' && charset !== 'utf8') return charset.slice(0, 40);
  }
  return null;
}

/** The 415 message for a body declared in {@link foreignCharset} `charset`. */
export function foreignCharsetMessage(charset: string): string {
  return `charset ${JSON.stringify(charset)} is not accepted: send the JSON body as UTF-8 (charset=utf-8, or no charset)`;
}

const tooLarge = (limit: number): BodyResult => ({
  ok: false,
  status: 413,
  reason: `body larger than ${limit} bytes`,
});

function joined(chunks: Uint8Array[]): Buffer {
  const first = chunks[0];
  if (chunks.length === 1 && first) return Buffer.from(first.buffer, first.byteOffset, first.byteLength);
  return Buffer.concat(chunks);
}

/** Reads a web stream (null for an empty body) up to `limit` bytes. */
export async function readBoundedBody(
  stream: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<BodyResult> {
  if (stream === null) return { ok: true, bytes: Buffer.alloc(0) };
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      // Stop reading; the listener answers 413 and closes the connection.
      reader.cancel().catch(() => undefined);
      return tooLarge(limit);
    }
    chunks.push(value);
  }
  return { ok: true, bytes: joined(chunks) };
}

/**
 * Reads Node's request stream up to `limit` bytes, Content-Length or chunked. Past the limit it
 * stops listening without destroying the socket: the server drains the rest after the 413 is
 * written, so the client reads the answer instead of a reset.
 */
export function readBoundedNodeBody(incoming: IncomingMessage, limit: number): Promise<BodyResult> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (result: BodyResult) => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onError);
      incoming.off('close', onClose);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > limit) done(tooLarge(limit));
      else chunks.push(chunk);
    };
    const onEnd = () => done({ ok: true, bytes: chunks.length === 0 ? Buffer.alloc(0) : joined(chunks) });
    const onError = (err: Error) => {
      incoming.off('data', onData);
      reject(err);
    };
    const onClose = () => {
      if (!incoming.complete) done({ ok: false, status: 400, reason: 'request body was cut off' });
    };
    incoming.on('data', onData);
    incoming.once('end', onEnd);
    incoming.once('error', onError);
    incoming.once('close', onClose);
  });
}

/** The Node request under Hono's, when the app runs on @hono/node-server (absent in `app.request()`). */
function nodeRequest(c: Context): IncomingMessage | undefined {
  return (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
}

/**
 * The request's body up to `limit` bytes. Read straight from Node's stream when there is one (no web
 * Request and ReadableStream per body: ~6 % of the event loop at 500 enqueues/s); through the web
 * stream otherwise (`app.request()` in tests).
 */
export function readRequestBody(c: Context, limit: number): Promise<BodyResult> {
  const incoming = nodeRequest(c);
  if (incoming && !incoming.readableDidRead && incoming.listenerCount('data') === 0)
    return readBoundedNodeBody(incoming, limit);
  return readBoundedBody(c.req.raw.body, limit);
}
