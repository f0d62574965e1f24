import type { Context } from 'hono';
import type { AppContext } from '../context.js';
import { unreachableReason } from '../postgres/availability.js';
import { pgUnavailableReason } from '../postgres/faults.js';
import { databaseFaultsFor, unavailableFor } from '../sqlite/faults.js';
import type { Sqlite } from '../sqlite/open.js';

/**
 * The answer to a request that failed because of the database's state (another process holding the
 * lock, disk full, file read-only, corruption, a server gone): 503 with Retry-After, which clients
 * retry, rather than a 500 they must not. Undefined when the error is not a database fault. Each
 * store's factory (app/) hands the API its own.
 */
export type UnavailableAnswer = (
  ctx: Pick<AppContext, 'log'>,
  c: Context,
  err: unknown,
) => Response | undefined;

/** SQLite's: the fault is noted on the handle, so status says what the 503s are about. */
export function sqliteUnavailableAnswer(sqlite: () => Sqlite): UnavailableAnswer {
  return (ctx, c, err) => {
    const kind = databaseFaultsFor(sqlite()).noteFailure(err);
    if (kind === null) return undefined;
    const refusal = unavailableFor(err, kind);
    ctx.log.warn(
      { event: 'api.database_unavailable', kind, code: refusal.code, method: c.req.method, path: c.req.path },
      refusal.message,
    );
    return c.json({ error: refusal.message }, 503, { 'retry-after': String(refusal.retryAfterSeconds) });
  };
}

/** PostgreSQL's: no per-handle fault record (status reads the server itself), the same 503. */
export const pgUnavailableAnswer: UnavailableAnswer = (ctx, c, err) => {
  const reason = pgUnavailableReason(err);
  if (reason === null) return undefined;
  // A server that is not there is logged once per outage (db.unreachable), not once per request.
  ctx.log[unreachableReason(err) === null ? 'warn' : 'debug'](
    { event: 'api.database_unavailable', kind: 'postgres', method: c.req.method, path: c.req.path },
    reason,
  );
  return c.json({ error: `${reason}; retry later` }, 503, { 'retry-after': '2' });
};
