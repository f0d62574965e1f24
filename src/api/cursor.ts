import { HTTPException } from 'hono/http-exception';

/** Opaque cursors: base64url JSON, so clients do not build them and we may change what is inside. */
export function encodeCursor(value: Record<string, string | number>): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** Decodes a cursor, or answers 400 naming the parameter. */
export function decodeCursor<T extends Record<string, string | number>>(
  cursor: string,
  keys: readonly (keyof T)[],
): T {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as T;
    if (parsed && typeof parsed === 'object' && keys.every((k) => k in parsed)) return parsed;
  } catch {
    // fall through to the 400
  }
  throw new HTTPException(400, { message: 'cursor: not a cursor this API gave out' });
}
