/**
 * Request headers for the webhook handler, read from Node's request when there is one. Hono's
 * `c.req.header(name)` on @hono/node-server first builds a web `Headers` of every header of the
 * request (undici validates and appends each): a profile of the listener under load put that at
 * ~12 % of the handler's time, for the five or six headers the handler reads.
 */
import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';
import type { HeaderReader } from './verifySignature.js';

/** HTTP whitespace (tab, LF, CR, space), which `Headers` strips from both ends of a value. */
function isHttpWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
}

/** A header value as `Headers` normalizes it: HTTP whitespace stripped from both ends. Pure. */
function normalized(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && isHttpWhitespace(value.charCodeAt(start))) start++;
  while (end > start && isHttpWhitespace(value.charCodeAt(end - 1))) end--;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

/**
 * Reads headers from Node's `rawHeaders` (name, value, name, value...) exactly as `Headers.get`
 * would answer for the same request: names compared case-insensitively, each value normalized,
 * repeated headers joined with ", " in arrival order. `name` must be lower-case. Pure.
 */
export function rawHeaderReader(rawHeaders: readonly string[]): HeaderReader {
  return (name) => {
    let found: string | undefined;
    for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
      const key = rawHeaders[i]!;
      if (key.length !== name.length || key.toLowerCase() !== name) continue;
      const value = normalized(rawHeaders[i + 1]!);
      found = found === undefined ? value : `${found}, ${value}`;
    }
    return found;
  };
}

/** The request's header reader: Node's raw headers under @hono/node-server, Hono's otherwise (`app.request()`). */
export function requestHeaders(c: Context): HeaderReader {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  if (incoming) return rawHeaderReader(incoming.rawHeaders);
  return (name) => c.req.header(name);
}
