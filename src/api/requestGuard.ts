import type { MiddlewareHandler } from 'hono';
import {
  declaredTooLarge,
  foreignCharset,
  foreignCharsetMessage,
  isJsonContentType,
} from '../http/httpBody.js';
import { isSafeMethod } from './auth.js';

/** Largest accepted request body, bytes. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** What the guard looks at. */
export interface GuardedRequest {
  method: string;
  /** The API's own origin, scheme://host[:port] as the request's Host names it (asked only when needed). */
  ownOrigin: () => string;
  header: (name: string) => string | undefined;
}

/** A refusal: status and the message the client gets. */
export interface Refusal {
  status: 403 | 413 | 415;
  message: string;
}

function sameOrigin(origin: string, own: string): boolean {
  try {
    return new URL(origin).origin === own;
  } catch {
    // "null" (sandboxed frames, file:, some redirects) and anything unparsable are not us.
    return false;
  }
}

/** Whether the request carries a body: a declared length above 0, or chunked. */
function hasBody(header: GuardedRequest['header']): boolean {
  const length = header('content-length');
  if (length !== undefined) return length.trim() !== '0';
  return header('transfer-encoding') !== undefined;
}

/**
 * Decides whether a request may go on to its route (pure). Any body over the limit by its declared
 * length is refused before it is read. State-changing requests are refused when a browser says they
 * come from another site (a foreign `Origin`, or `Sec-Fetch-Site` other than same-origin or none),
 * and when they carry a body, or any content type, other than JSON: a form can send text/plain,
 * urlencoded or multipart cross-site without a preflight, never application/json. Requests without
 * `Origin` (curl, servers) are not browsers' and pass.
 */
export function refusal(req: GuardedRequest): Refusal | null {
  if (declaredTooLarge(req.header('content-length'), MAX_BODY_BYTES)) {
    return { status: 413, message: `request body is larger than ${MAX_BODY_BYTES} bytes` };
  }
  if (isSafeMethod(req.method)) return null;
  const origin = req.header('origin');
  if (origin !== undefined && !sameOrigin(origin, req.ownOrigin())) {
    return {
      status: 403,
      message: `Origin ${JSON.stringify(origin.slice(0, 100))} is not this API (${req.ownOrigin()}): cross-site ${req.method} refused`,
    };
  }
  const site = req.header('sec-fetch-site')?.trim().toLowerCase();
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    return { status: 403, message: `Sec-Fetch-Site ${site}: cross-site ${req.method} refused` };
  }
  const type = req.header('content-type');
  if ((type !== undefined || hasBody(req.header)) && !isJsonContentType(type)) {
    return {
      status: 415,
      message: `content type must be application/json (got ${type === undefined ? 'none' : JSON.stringify(type.slice(0, 100))})`,
    };
  }
  const charset = foreignCharset(type);
  if (charset !== null) return { status: 415, message: foreignCharsetMessage(charset) };
  return null;
}

/** {@link refusal} as middleware; a 413 closes the connection (the unread body makes it unusable). */
export function requestGuard(): MiddlewareHandler {
  return async (c, next) => {
    const refused = refusal({
      method: c.req.method,
      ownOrigin: () => new URL(c.req.url).origin,
      header: (name) => c.req.header(name),
    });
    if (!refused) return next();
    return c.json(
      { error: refused.message },
      refused.status,
      refused.status === 413 ? { connection: 'close' } : {},
    );
  };
}
