import { retryDelayMs } from '../common/backoff.js';
import { cancellableSleep } from '../common/clock.js';
import { untilAborted } from '../common/linkedSignal.js';
import type { AppContext } from '../context.js';
import { OperatorError } from '../operator/operatorErrors.js';

/** Options of {@link Retry}. */
export interface RetryOptions {
  /** Attempts in all, the first included (default: 5). */
  attempts: number;
  /** Longest wait between attempts, Retry-After included, ms (default: 60000). */
  capMs: number;
  /** First backoff, doubled per attempt, ms (default: 500). */
  baseMs?: number;
  /** How to wait; tests inject one that does not (default: setTimeout). */
  sleep?: (ms: number) => Promise<void>;
  /** Source of jitter in [0, 1) (default: Math.random). */
  random?: () => number;
  /** Told about each retry, to log it (default: none). */
  onRetry?: (err: OperatorError, attempt: number, waitMs: number) => void;
  /** Stops waiting and gives up when aborted (default: none). */
  signal?: AbortSignal;
}

export const realSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The attempts at one read of the operator: transient and rate-limited operator errors are waited
 * out (backoff of src/common/backoff.ts, Retry-After honoured up to the cap) until `attempts` are spent;
 * anything else is thrown at once. One budget per read, so a body that breaks part-way while it is
 * being written spends the same attempts as a request that failed outright.
 */
export class Retry {
  private attempt = 1;

  constructor(private readonly options: RetryOptions) {}

  /** Runs `fn`, retrying it within the budget. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        return await fn();
      } catch (err) {
        await this.failed(err);
      }
    }
  }

  /** Takes a failure of this read: rethrows it unless it is retryable and attempts remain, else waits. */
  async failed(err: unknown): Promise<void> {
    const { options } = this;
    if (!(err instanceof OperatorError) || !err.retryable || this.attempt >= options.attempts) throw err;
    if (options.signal?.aborted) throw err;
    const policy = { baseMs: options.baseMs ?? 500, capMs: options.capMs };
    const random = options.random ?? Math.random;
    const wait = retryDelayMs(this.attempt, err.retryAfterMs, policy, random, options.capMs);
    options.onRetry?.(err, this.attempt, wait);
    this.attempt++;
    const sleep = options.sleep ?? realSleep;
    // The real timer is cleared on abort too, so a stopped process is not kept alive by it.
    await (sleep === realSleep
      ? cancellableSleep(wait, options.signal)
      : untilAborted(sleep(wait), options.signal));
    if (options.signal?.aborted) throw err;
  }
}

/**
 * The retry budget of one read of the operator by a sync run (a page, a custody read), set from
 * `sync.page_attempts` and `sync.retry_cap_ms`, each retry logged as `sync.page.retry` with `fields`.
 */
export function readRetry(
  ctx: AppContext,
  run: { sleep?: ((ms: number) => Promise<void>) | undefined; signal?: AbortSignal | undefined },
  message: string,
  fields: Record<string, string | number>,
): Retry {
  return new Retry({
    attempts: ctx.config.sync.page_attempts,
    capMs: ctx.config.sync.retry_cap_ms,
    sleep: run.sleep ?? realSleep,
    signal: run.signal,
    onRetry: (err, attempt, waitMs) =>
      ctx.log.warn(
        { event: 'sync.page.retry', ...fields, attempt, waitMs, kind: err.kind, error: err.message },
        message,
      ),
  });
}
