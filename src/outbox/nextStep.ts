import { type BackoffPolicy, retryDelayMs } from '../common/backoff.js';
import type { OperatorError } from '../operator/operatorErrors.js';

/** What one POST /notify came to. */
export type AttemptOutcome =
  | { kind: 'answered'; status: number; body: string }
  | { kind: 'error'; error: OperatorError };

/** The limits a failing row runs into. */
export interface RetryPolicy extends BackoffPolicy {
  /** Attempts before the row is failed (default: config outbox.max_attempts). */
  maxAttempts: number;
  /** Age after which a row still not accepted is failed, ms (default: config outbox.max_age_hours). */
  maxAgeMs: number;
}

/** The facts about a row that the decision needs. */
export interface RowFacts {
  /** Attempts made, this one included. */
  attempts: number;
  /** When its age started: the last manual retry, else its enqueue time (ms). */
  ageFromMs: number;
}

/** What the row becomes after an attempt. */
export type NextStep =
  | { state: 'accepted'; status: number; response: string }
  | {
      state: 'queued';
      nextAttemptAtMs: number;
      error: string;
      status: number | null;
      /** An auth failure is not the row's fault: the attempt is given back. */
      refund: boolean;
      /** Sending must pause for every row (401/403). */
      pause: boolean;
    }
  | { state: 'failed'; error: string; status: number | null };

/**
 * The outcome of an attempt → the row's next state. Pure. 2xx is accepted; 401/403 pause all
 * sending and requeue the row without burning an attempt; other 4xx (but 408/425/429) fail at
 * once with the operator's message; everything else retries with backoff (honouring
 * Retry-After) until max_attempts or max_age_hours runs out.
 */
export function decideAttempt(
  outcome: AttemptOutcome,
  row: RowFacts,
  policy: RetryPolicy,
  nowMs: number,
  random: () => number,
): NextStep {
  if (outcome.kind === 'answered')
    return { state: 'accepted', status: outcome.status, response: outcome.body };
  const { error } = outcome;
  const status = error.status ?? null;
  if (error.kind === 'auth') {
    return {
      state: 'queued',
      nextAttemptAtMs: nowMs,
      error: error.message,
      status,
      refund: true,
      pause: true,
    };
  }
  if (error.kind === 'permanent') return { state: 'failed', error: error.message, status };
  if (row.attempts >= policy.maxAttempts) {
    return {
      state: 'failed',
      error: `gave up after ${row.attempts} attempt${row.attempts === 1 ? '' : 's'}; last: ${error.message}`,
      status,
    };
  }
  if (nowMs - row.ageFromMs >= policy.maxAgeMs) {
    const hours = Math.round((policy.maxAgeMs / 3_600_000) * 10) / 10;
    return {
      state: 'failed',
      error: `gave up after ${hours} hours unaccepted; last: ${error.message}`,
      status,
    };
  }
  const delay = retryDelayMs(row.attempts, error.retryAfterMs, policy, random);
  return {
    state: 'queued',
    nextAttemptAtMs: nowMs + delay,
    error: error.message,
    status,
    refund: false,
    pause: false,
  };
}
