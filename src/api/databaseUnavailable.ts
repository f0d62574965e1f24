import type { Context } from 'hono';
import type { AppContext } from '../context.js';
import type { ClassifyFault } from '../health/refusal.js';

/**
 * The answer to a request that failed because of the database's state (another process holding the
 * lock, disk full, file read-only, corruption, a server gone): 503 with Retry-After, which clients
 * retry, rather than a 500 they must not. Undefined when the error is not a database fault. Each
 * store classifies its own errors ({@link ClassifyFault}, built by its factory in app/).
 */
export function unavailableAnswer(
  classify: ClassifyFault,
  ctx: Pick<AppContext, 'log'>,
  c: Context,
  err: unknown,
): Response | undefined {
  const refusal = classify(err);
  if (refusal === null) return undefined;
  const { kind, code, message, retryAfterSeconds } = refusal;
  ctx.log[refusal.quiet ? 'debug' : 'warn'](
    { event: 'api.database_unavailable', kind, code, method: c.req.method, path: c.req.path },
    message,
  );
  return c.json({ error: message }, 503, { 'retry-after': String(retryAfterSeconds) });
}
