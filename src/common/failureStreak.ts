import { type BackoffPolicy, backoffDelayMs } from './backoff.js';

/**
 * A loop's run of consecutive store failures (a locked SQLite file, PostgreSQL away): how long to
 * wait before the next try, and whether to say so. A loop that polls every 20 ms must neither
 * hammer a database that is down nor write a log line per poll: it backs off from its poll period
 * to {@link STORE_RETRY_CAP_MS}, logs the first failure of a run, and logs once when it works again.
 */

/** Longest wait between two tries of a failing store (ms): short, so work resumes soon after. */
export const STORE_RETRY_CAP_MS = 5_000;

/** What the loop does after a failure. */
export interface FailureStep {
  /** Wait this long before the next try (ms). */
  delayMs: number;
  /** The first failure of a run: the one worth a log line. */
  first: boolean;
}

/** Consecutive failures of one loop. */
export class FailureStreak {
  private failures = 0;

  constructor(
    /** The loop's own period: the first wait (ms). */
    private readonly baseMs: number,
    private readonly random: () => number = Math.random,
    private readonly capMs: number = STORE_RETRY_CAP_MS,
  ) {}

  /** A try failed: how long to wait, and whether it starts a run. */
  failed(): FailureStep {
    this.failures += 1;
    const policy: BackoffPolicy = {
      baseMs: Math.max(1, this.baseMs),
      capMs: Math.max(this.baseMs, this.capMs),
    };
    return { delayMs: backoffDelayMs(this.failures, policy, this.random), first: this.failures === 1 };
  }

  /** A try worked: how many had failed before it (0 when none: nothing to say). */
  succeeded(): number {
    const ended = this.failures;
    this.failures = 0;
    return ended;
  }
}
