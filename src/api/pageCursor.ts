import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { HTTPException } from 'hono/http-exception';
import type { z } from 'zod';

/**
 * Opaque cursors: base64url JSON, so clients do not build them and we may change what is inside,
 * followed by a MAC of that text, so that a cursor the API never gave out (one a client built by
 * hand, or edited) is refused instead of answered as a page after some key nobody was shown.
 */

/** The key cursors are signed with (32 bytes). */
export type CursorKey = Buffer;

/** What the MAC is made for: another use of the same secret never yields the same bytes. */
const PURPOSE = 'vcu-sync list cursor v1';
/** Bytes of the MAC kept in a cursor: 128 bits, beyond guessing. */
const MAC_BYTES = 16;
const REFUSED = 'cursor: not a cursor this API gave out';

/**
 * The cursor key of an API whose bearer token is `token`: derived from it, so every replica with
 * the same config and every restart accept the cursors the others gave out; a new token ends the old
 * cursors (the client starts again from the first page). Without a token (every list is refused
 * then anyway) a random key of this process.
 */
export function cursorKeyFor(token: string | undefined): CursorKey {
  if (token === undefined) return randomBytes(32);
  return createHmac('sha256', token).update(PURPOSE).digest();
}

function macOf(payload: string, key: CursorKey): Buffer {
  return createHmac('sha256', key).update(payload).digest().subarray(0, MAC_BYTES);
}

/** The cursor of a base64url `payload`: the payload, a dot (never in base64url), its MAC. */
export function signedCursor(payload: string, key: CursorKey): string {
  return `${payload}.${macOf(payload, key).toString('base64url')}`;
}

/** A cursor holding `value`, signed with `key`. */
export function encodeCursor(value: Record<string, string | number>, key: CursorKey): string {
  return signedCursor(Buffer.from(JSON.stringify(value)).toString('base64url'), key);
}

/** The payload of a cursor signed with `key`, or undefined when it is not one (pure). */
function verifiedPayload(cursor: string, key: CursorKey): unknown {
  const dot = cursor.indexOf('.');
  if (dot < 0) return undefined;
  const payload = cursor.slice(0, dot);
  const mac = Buffer.from(cursor.slice(dot + 1), 'base64url');
  const expected = macOf(payload, key);
  if (mac.length !== expected.length || !timingSafeEqual(mac, expected)) return undefined;
  try {
    return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * Decodes a cursor, checks its MAC and its contents against `shape` (key names and value types), or
 * answers 400 naming the parameter. The shape is checked even behind a good MAC: a cursor of another
 * list, or of an older release, must not reach the SQL binding as a value it cannot bind.
 */
export function decodeCursor<S extends z.ZodType>(cursor: string, shape: S, key: CursorKey): z.output<S> {
  const checked = shape.safeParse(verifiedPayload(cursor, key));
  if (checked.success) return checked.data;
  throw new HTTPException(400, { message: REFUSED });
}
