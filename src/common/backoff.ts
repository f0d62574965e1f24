/**
 * Retry timing, one formula for every loop that retries the operator (the mirror's page reads, the
 * outbox's sends). Pure: the caller passes the random source.
 */

/** How retries are spaced. */
export interface BackoffPolicy {
  /** Delay after the first failed attempt, doubled after each further one, ms (no default: each caller's config). */
  baseMs: number;
  /** Longest backoff delay, ms (no default: each caller's config). */
  capMs: number;
}

/** Longest Retry-After honoured by default, so a confused operator cannot park a row for months. */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/**
 * Delay before the next try after `failures` consecutive failures (1 for the first): exponential,
 * capped, with "equal jitter" (half fixed, half random) so callers that failed together spread out
 * but never retry at once.
 */
export function backoffDelayMs(failures: number, policy: BackoffPolicy, random: () => number): number {
  // The exponent is bounded so a long run of failures cannot overflow to Infinity before the cap.
  const exponent = Math.min(Math.max(failures - 1, 0), 40);
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** exponent);
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/**
 * The backoff delay, but never sooner than the operator's Retry-After, which is itself honoured up
 * to `retryAfterCapMs` (default: {@link MAX_RETRY_AFTER_MS}): a sync run caps it at its own backoff
 * cap, so one answer cannot hold a run for hours.
 */
export function retryDelayMs(
  failures: number,
  retryAfterMs: number | undefined,
  policy: BackoffPolicy,
  random: () => number,
  retryAfterCapMs: number = MAX_RETRY_AFTER_MS,
): number {
  const backoff = backoffDelayMs(failures, policy, random);
  if (retryAfterMs === undefined) return backoff;
  return Math.max(backoff, Math.min(Math.max(0, retryAfterMs), retryAfterCapMs));
}
