import { type BackoffPolicy, retryDelayMs } from '../common/backoff.js';
import { isoAt } from '../common/clock.js';
import type { DeliveryStep } from './queries.js';

/** What comes after one attempt to deliver. Pure: time and randomness are passed in. */

/** How a subscriber answered, or that it did not. */
export type DeliveryOutcome =
  | { kind: 'answered'; status: number; retryAfterMs: number | undefined }
  | { kind: 'error'; error: string };

/** Retry spacing and the dead-letter limits. */
export interface DeliveryPolicy extends BackoffPolicy {
  maxAttempts: number;
  maxAgeMs: number;
}

/** The row's facts the decision needs. */
export interface DeliveryFactsForStep {
  /** Attempts including this one. */
  attempts: number;
  /** created_at, or redriven_at when a person sent it again (ms). */
  ageFromMs: number;
}

/**
 * 2xx is delivered. Anything else (another status, a refused connection, a timeout) is tried again
 * after a backoff with jitter (never sooner than Retry-After), until the attempts or the age run
 * out: then the row is dead, and the subscriber's later rows go on (a dead row must not hold the
 * rest for ever; a person redrives it).
 */
export function decideDelivery(
  outcome: DeliveryOutcome,
  row: DeliveryFactsForStep,
  policy: DeliveryPolicy,
  nowMs: number,
  random: () => number,
): DeliveryStep {
  if (outcome.kind === 'answered' && outcome.status >= 200 && outcome.status < 300)
    return { to: 'delivered', status: outcome.status };
  const status = outcome.kind === 'answered' ? outcome.status : null;
  const error = outcome.kind === 'answered' ? `HTTP ${outcome.status}` : outcome.error;
  if (row.attempts >= policy.maxAttempts)
    return { to: 'dead', status, error: `${error} (after ${row.attempts} attempts)` };
  if (nowMs - row.ageFromMs >= policy.maxAgeMs)
    return { to: 'dead', status, error: `${error} (older than the maximum age)` };
  const retryAfter = outcome.kind === 'answered' ? outcome.retryAfterMs : undefined;
  const delay = retryDelayMs(row.attempts, retryAfter, policy, random);
  return { to: 'pending', nextAttemptAt: isoAt(nowMs + delay), status, error };
}
