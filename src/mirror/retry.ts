import { OperatorError } from '../operator/errors.js';

/** Options of {@link withRetry}. */
export interface RetryOptions {
  /** Attempts in all, the first included (default: 5). */
  attempts: number;
  /** Longest wait between attempts, ms (default: 60000). */
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
 * The wait before attempt `attempt + 1` (pure): the operator's Retry-After when it gave one,
 * else exponential backoff with jitter; never more than the cap.
 */
export function retryDelay(
  attempt: number,
  err: OperatorError,
  capMs: number,
  baseMs: number,
  random: number,
): number {
  if (err.retryAfterMs !== undefined) return Math.min(capMs, Math.max(0, err.retryAfterMs));
  const exp = baseMs * 2 ** Math.max(0, attempt - 1);
  return Math.min(capMs, Math.round(exp * (0.5 + random / 2)));
}

/** Runs `fn`, retrying transient and rate-limited operator errors; anything else is thrown at once. */
export async function withRetry<T>(fn: () => Promise<T>, options: RetryOptions): Promise<T> {
  const sleep = options.sleep ?? realSleep;
  const random = options.random ?? Math.random;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof OperatorError) || !err.retryable || attempt >= options.attempts) throw err;
      if (options.signal?.aborted) throw err;
      const wait = retryDelay(attempt, err, options.capMs, options.baseMs ?? 500, random());
      options.onRetry?.(err, attempt, wait);
      // The real timer is cleared on abort too, so a stopped process is not kept alive by it.
      await (sleep === realSleep
        ? cancellableSleep(wait, options.signal)
        : abortable(sleep(wait), options.signal));
      if (options.signal?.aborted) throw err;
    }
  }
}

/** Resolves when `wait` does or as soon as `signal` aborts, so a stop never waits out a backoff. */
function abortable(wait: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return wait;
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    void wait.then(done, done);
  });
}

/** setTimeout that an abort ends early and clears. */
export function cancellableSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
