/**
 * Which PostgreSQL errors mean "the database is unavailable for now" (a client should retry) rather
 * than a fault of the request: the server unreachable or restarting, connections exhausted, a
 * transaction chosen as a deadlock or serialization victim. Pure: the error in, a reason or null.
 */

/** SQLSTATE classes and codes a retry can cure. */
const RETRYABLE_STATES: ReadonlyArray<[prefix: string, reason: string]> = [
  ['08', 'the connection to the database failed'],
  ['57P01', 'the database server is shutting down'],
  ['57P02', 'the database server crashed'],
  ['57P03', 'the database server is starting up'],
  ['53300', 'the database has no free connection'],
  ['40001', 'the transaction lost a serialization race'],
  ['40P01', 'the transaction was chosen as a deadlock victim'],
];

/** Node's network error codes of a connection that could not be made or was cut. */
export const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EPIPE',
]);

/** Why `err` makes the database unavailable for now, or null when it is not such an error. */
export function pgUnavailableReason(err: unknown): string | null {
  if (!(err instanceof Error)) return null;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    for (const [prefix, reason] of RETRYABLE_STATES) if (code.startsWith(prefix)) return reason;
    if (NETWORK_CODES.has(code)) return 'the database server cannot be reached';
  }
  // pg's own words for a pool or connection that gave up (no code).
  if (
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
      err.message,
    )
  )
    return 'the connection to the database failed';
  return null;
}
