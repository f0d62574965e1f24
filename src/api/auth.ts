import { createHash, timingSafeEqual } from 'node:crypto';
import type { MiddlewareHandler } from 'hono';

/** Paths answered without a token (load balancers and systemd probes carry none). */
export const PUBLIC_PATHS: ReadonlySet<string> = new Set(['/healthz']);

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Whether `given` equals `expected`, in time that depends on neither (digests have one length). */
export function tokenMatches(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * Requires `Authorization: Bearer <api.token>` on everything but {@link PUBLIC_PATHS}. With no
 * token configured every other call is refused: an internal API that writes to the outbox is
 * never open by accident.
 */
export function bearerAuth(token: string | undefined): MiddlewareHandler {
  return async (c, next) => {
    if (PUBLIC_PATHS.has(c.req.path)) return next();
    if (!token) {
      return c.json(
        { error: 'the internal API has no token configured (set api.token or VCU_SYNC_API_TOKEN)' },
        401,
      );
    }
    const header = c.req.header('authorization') ?? '';
    const match = /^Bearer\s+(.+)$/i.exec(header.trim());
    if (!match || !tokenMatches(match[1]!, token)) {
      c.header('www-authenticate', 'Bearer');
      return c.json({ error: 'missing or wrong bearer token' }, 401);
    }
    return next();
  };
}
