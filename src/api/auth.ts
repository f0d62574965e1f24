import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';

/** Paths answered without a token (load balancers and systemd probes carry none). */
export const PUBLIC_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/runbook']);

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Whether `given` equals `expected`, in time that depends on neither (digests have one length). */
export function tokenMatches(given: string, expected: string): boolean {
  return digestMatches(given, digest(expected));
}

/** {@link tokenMatches} against a digest taken once (one hash per request, not two). */
function digestMatches(given: string, expectedDigest: Buffer): boolean {
  return timingSafeEqual(digest(given), expectedDigest);
}

/** Methods that only read: everything else changes state. */
export function isSafeMethod(method: string): boolean {
  return method === 'GET' || method === 'HEAD' || method === 'OPTIONS';
}

/** The credentials a request offers: `Bearer <token>`, or the password of HTTP Basic (for browsers). */
function offeredCredentials(header: string): { scheme: 'bearer' | 'basic'; token: string } | undefined {
  const bearer = /^Bearer\s+(.+)$/i.exec(header.trim());
  if (bearer) return { scheme: 'bearer', token: bearer[1]! };
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(header.trim());
  if (!basic) return undefined;
  const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon >= 0 ? { scheme: 'basic', token: decoded.slice(colon + 1) } : undefined;
}

/**
 * Requires the API token on everything but {@link PUBLIC_PATHS}: as `Authorization: Bearer <token>`,
 * or as the password of HTTP Basic so an on-call engineer can open the status page in a browser
 * (which asks for it). Basic is for reads only: a browser replays Basic credentials on any request
 * to the origin, a cross-site form POST included, so a state-changing request must carry the Bearer
 * header, which only code that holds the token can set. With no token configured every other call
 * is refused: an internal API that writes to the outbox is never open by accident.
 */
export function bearerAuth(token: string | undefined): MiddlewareHandler {
  const expectedDigest = token ? digest(token) : undefined;
  return async (c, next) => {
    if (PUBLIC_PATHS.has(c.req.path)) return next();
    if (!expectedDigest) {
      return c.json(
        { error: 'the internal API has no token configured (set api.token or VCU_SYNC_API_TOKEN)' },
        401,
      );
    }
    const offered = offeredCredentials(c.req.header('authorization') ?? '');
    if (offered === undefined || !digestMatches(offered.token, expectedDigest)) {
      // Browsers prompt for Basic credentials only when challenged with it: do so for the status page.
      c.header('www-authenticate', c.req.path === '/' ? 'Basic realm="vcu-sync", charset="UTF-8"' : 'Bearer');
      return c.json({ error: 'missing or wrong bearer token' }, 401);
    }
    if (offered.scheme === 'basic' && !isSafeMethod(c.req.method)) {
      return c.json(
        {
          error: `Basic credentials are accepted for reads only; ${c.req.method} needs Authorization: Bearer <api token>`,
        },
        403,
      );
    }
    return next();
  };
}
