/**
 * A request refused for the database's state, as its store words it: each store classifies its own
 * errors (its adapter builds the {@link ClassifyFault}), and the API answers any of them with 503
 * and Retry-After (api/databaseUnavailable.ts) without naming a store. Here, below the API and the
 * adapters, so that both import it downward.
 */

/** A request refused for the database's state, as its store words it. */
export interface DatabaseRefusal {
  /** The kind of fault, for the log (e.g. busy, write, corrupt, unreachable). */
  kind: string;
  /** The store's code for it, when it has one. */
  code?: string;
  /** The client's words: no row values, no secrets. */
  message: string;
  retryAfterSeconds: number;
  /** Logged at debug, not warn: an outage the store logs once itself, not once per request. */
  quiet?: boolean;
}

/**
 * How a store reads a failed request's error: the refusal, or null when the error is not the
 * database's state (a constraint, a bug). May note the fault, so status says what the 503s are about.
 */
export type ClassifyFault = (err: unknown) => DatabaseRefusal | null;
