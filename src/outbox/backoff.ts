/** Retry timing of the outbox. Pure: the caller passes the random source. */

/** How retries are spaced. */
export interface BackoffPolicy {
  /** Delay after the first failed attempt, doubled after each further one, ms (default: config outbox.backoff_base_ms). */
  baseMs: number;
  /** Longest delay, ms (default: config outbox.backoff_cap_ms). */
  capMs: number;
}

/** Longest Retry-After honoured, so a confused operator cannot park a row for months. */
export const MAX_RETRY_AFTER_MS = 24 * 3_600_000;

/**
 * Delay before the next try after `failures` consecutive failures (1 for the first): exponential,
 * capped, with "equal jitter" (half fixed, half random) so rows that failed together spread out
 * but never retry at once.
 */
export function backoffDelayMs(failures: number, policy: BackoffPolicy, random: () => number): number {
  const exponent = Math.min(Math.max(failures - 1, 0), 40);
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** exponent);
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/** The backoff delay, but never sooner than the operator's Retry-After. */
export function retryDelayMs(
  failures: number,
  retryAfterMs: number | undefined,
  policy: BackoffPolicy,
  random: () => number,
): number {
  const backoff = backoffDelayMs(failures, policy, random);
  if (retryAfterMs === undefined) return backoff;
  return Math.max(backoff, Math.min(retryAfterMs, MAX_RETRY_AFTER_MS));
}
