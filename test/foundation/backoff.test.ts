import { describe, expect, it } from 'vitest';
import { backoffDelayMs, MAX_RETRY_AFTER_MS, retryDelayMs } from '../../src/common/backoff.js';

/** The one retry formula (mirror page reads and outbox sends), row by row. */
describe('backoff', () => {
  const policy = { baseMs: 500, capMs: 60_000 };
  const rows: [string, number, number, number][] = [
    // [why, failures, random, expected ms]
    ['first failure, least jitter: half the base', 1, 0, 250],
    ['first failure, most jitter: the base', 1, 1, 500],
    ['doubles per failure', 3, 1, 2_000],
    ['equal jitter: half fixed, half random', 3, 0.5, 1_500],
    ['capped before the jitter, so failures together still spread', 20, 0, 30_000],
    ['never more than the cap', 20, 1, 60_000],
    ['a huge failure count stays finite', 10_000, 1, 60_000],
    ['zero failures counts as the first', 0, 1, 500],
  ];
  for (const [why, failures, random, expected] of rows) {
    it(why, () => expect(backoffDelayMs(failures, policy, () => random)).toBe(expected));
  }

  const after: [string, number | undefined, number | undefined, number][] = [
    // [why, Retry-After ms, its cap, expected ms] with failures = 1 and random = 1 (backoff 500)
    ['no Retry-After: the backoff', undefined, undefined, 500],
    ['a Retry-After longer than the backoff is honoured', 2_000, undefined, 2_000],
    ['a Retry-After shorter than the backoff never retries sooner', 100, undefined, 500],
    ['a negative Retry-After counts as none', -5_000, undefined, 500],
    ['honoured up to a day by default', 10 * MAX_RETRY_AFTER_MS, undefined, MAX_RETRY_AFTER_MS],
    ['a sync run caps it at its own cap', 3_600_000, 60_000, 60_000],
  ];
  for (const [why, retryAfter, cap, expected] of after) {
    it(why, () => expect(retryDelayMs(1, retryAfter, policy, () => 1, cap)).toBe(expected));
  }
});
