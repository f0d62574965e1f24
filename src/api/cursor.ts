import { HTTPException } from 'hono/http-exception';
import type { z } from 'zod';

/** Opaque cursors: base64url JSON, so clients do not build them and we may change what is inside. */
export function encodeCursor(value: Record<string, string | number>): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/**
 * Decodes a cursor and checks it against `shape` (key names and value types), or answers 400 naming
 * the parameter. A forged cursor is input like any other: a boolean, object or array where a key
 * belongs would otherwise reach the SQL binding and fail there as a 500.
 */
export function decodeCursor<S extends z.ZodType>(cursor: string, shape: S): z.output<S> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const checked = shape.safeParse(parsed);
  if (checked.success) return checked.data;
  throw new HTTPException(400, { message: 'cursor: not a cursor this API gave out' });
}
