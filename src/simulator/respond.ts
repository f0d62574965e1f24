/**
 * Raw node response writing. Lists and faults bypass Hono's Response objects: pages are written
 * as one Buffer with a Content-Length, unpaginated lists are streamed in ~64 KiB chunks with
 * backpressure (never one string, so 1,000,000 records use flat memory), and the transport faults
 * (reset, truncated) need the socket itself.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Set on a response to tell the stats what really happened when it closes. */
export const outcomeOf = new WeakMap<ServerResponse, string>();

const JSON_TYPE = 'application/json; charset=utf-8';

export function writeJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  writeBody(res, status, JSON.stringify(body), headers);
}

/** Destroys the connection without any response: the client sees ECONNRESET / socket hang up. */
export function resetSocket(req: IncomingMessage, res: ServerResponse): void {
  outcomeOf.set(res, 'reset');
  req.socket.destroy();
}

/**
 * Sends a body cut in half. `short-body`: headers promise the full length, half is sent, then the
 * socket is destroyed. `cut-json`: a well-formed HTTP response whose JSON body ends mid-value.
 */
export function writeTruncated(
  res: ServerResponse,
  status: number,
  body: string,
  mode: 'short-body' | 'cut-json',
): void {
  outcomeOf.set(res, 'truncated');
  const full = Buffer.from(body);
  const half = full.subarray(0, Math.max(1, Math.floor(full.length / 2)));
  if (mode === 'cut-json') {
    res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': String(half.length) });
    res.end(half);
    return;
  }
  res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': String(full.length) });
  res.write(half, () => res.destroy());
}

export function writeHtmlError(res: ServerResponse, status: number): void {
  const html =
    '<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head>' +
    '<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>\n';
  const buf = Buffer.from(html);
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'content-length': String(buf.length) });
  res.end(buf);
}

/** A page body: bounded by maxPageSize, so it is serialised at once (faster than per record). */
export function jsonArrayBody(records: readonly unknown[]): string {
  return JSON.stringify(records);
}

export function writeBody(
  res: ServerResponse,
  status: number,
  body: string,
  headers: Record<string, string> = {},
): void {
  const buf = Buffer.from(body);
  res.writeHead(status, { ...headers, 'content-type': JSON_TYPE, 'content-length': String(buf.length) });
  res.end(buf);
}

const CHUNK_BYTES = 64 * 1024;

/**
 * Streams `[r1,r2,...]` with chunked encoding, waiting for 'drain' whenever the socket buffer is
 * full. `cutAfter` (truncated fault): stop after that many records and destroy the socket, so
 * the client sees a chunked body that never terminates.
 */
export async function streamJsonArray(
  res: ServerResponse,
  records: Iterable<unknown>,
  cutAfter?: number,
): Promise<void> {
  res.writeHead(200, { 'content-type': JSON_TYPE });
  let chunk = '[';
  let n = 0;
  for (const r of records) {
    if (res.destroyed) return;
    if (cutAfter !== undefined && n >= cutAfter) {
      outcomeOf.set(res, 'truncated');
      res.write(chunk, () => res.destroy());
      return;
    }
    chunk += n === 0 ? JSON.stringify(r) : `,${JSON.stringify(r)}`;
    n++;
    if (chunk.length >= CHUNK_BYTES) {
      const ok = res.write(chunk);
      chunk = '';
      if (!ok) await drained(res);
    }
  }
  if (res.destroyed) return;
  res.end(`${chunk}]`);
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
