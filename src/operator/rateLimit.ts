import { type Clock, systemClock } from '../clock.js';

/**
 * The request rate to the operator, adapted to what it accepts (AIMD, as TCP does with its window):
 * `operator.rate_per_second` is the ceiling and the starting rate; a 429 halves the rate (never below
 * the floor) and forbids any request before its Retry-After; every success adds
 * `increasePerSecond / rate`, so a client sending at its rate climbs by `increasePerSecond` each second.
 */

/** Limits of the adaptive rate (requests per second). */
export interface RateConfig {
  /** The most the rate may reach, and where it starts (`operator.rate_per_second`). */
  ceiling: number;
  /** The least a run of 429s may bring it to (`operator.min_rate_per_second`; capped at the ceiling). */
  floor: number;
  /** What a second of successes at the current rate adds (`operator.rate_increase_per_second`). */
  increasePerSecond: number;
}

/** What the limiter knows, between requests. */
export interface RateState {
  /** Requests per second allowed now. */
  rate: number;
  /** When the rate was last cut (ms since the epoch); null if never. */
  decreasedAt: number | null;
  /** No request may leave before this (ms since the epoch): the last Retry-After. */
  notBefore: number;
}

/** The answer to one request, as the rate sees it. */
export type RateEvent =
  /** A 2xx. */
  | { kind: 'ok'; sentAt: number }
  /** A 429; `retryAfterMs` from its Retry-After, when it had one. */
  | { kind: 'limited'; sentAt: number; at: number; retryAfterMs?: number | undefined };

/** The state before the first request: the ceiling, nothing forbidden. */
export function initialRate(config: RateConfig): RateState {
  return { rate: config.ceiling, decreasedAt: null, notBefore: 0 };
}

/**
 * The state after one answer (pure). A 429 to a request sent before the last cut says nothing new
 * (it left at the old rate, as concurrent requests do), so it only extends the Retry-After.
 */
export function nextRate(current: RateState, event: RateEvent, config: RateConfig): RateState {
  const floor = Math.min(config.floor, config.ceiling);
  if (event.kind === 'ok') {
    const rate = Math.min(config.ceiling, current.rate + config.increasePerSecond / current.rate);
    return rate === current.rate ? current : { ...current, rate };
  }
  const notBefore = Math.max(current.notBefore, event.at + Math.max(0, event.retryAfterMs ?? 0));
  const stale = current.decreasedAt !== null && event.sentAt < current.decreasedAt;
  if (stale) return { ...current, notBefore };
  return { rate: Math.max(floor, current.rate / 2), decreasedAt: event.at, notBefore };
}

/** Options of {@link RateLimiter}. */
export interface RateLimiterOptions {
  config: RateConfig;
  /** (default: the system clock) */
  clock?: Clock;
  /** How to wait; tests pass one that moves their clock (default: setTimeout). */
  sleep?: (ms: number) => Promise<void>;
  /** Told the new rate whenever it changes, with the event that changed it (default: none). */
  onChange?: (rate: number, event: RateEvent) => void;
}

/**
 * A token bucket shared by every loop that calls the operator, so the sum of their requests stays
 * under the rate the operator accepts; its rate follows {@link nextRate}. Waiters are served in
 * arrival order. Bursts hold at most one second of requests (at least one).
 */
export class RateLimiter {
  private state: RateState;
  private tokens: number;
  private last: number;
  private queue: Promise<void> = Promise.resolve();
  private readonly clock: Clock;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(private readonly options: RateLimiterOptions) {
    this.clock = options.clock ?? systemClock;
    this.sleep = options.sleep ?? timerSleep;
    this.state = initialRate(options.config);
    this.tokens = this.capacity();
    this.last = this.clock.now();
  }

  /** Requests per second allowed now. */
  get rate(): number {
    return this.state.rate;
  }

  /** The configured most. */
  get ceiling(): number {
    return this.options.config.ceiling;
  }

  private capacity(): number {
    return Math.max(1, this.state.rate);
  }

  /** Milliseconds to wait before one more request may go, taking its token (pure bookkeeping). */
  reserve(): number {
    const now = this.clock.now();
    const start = Math.max(now, this.state.notBefore);
    if (start > this.last) {
      this.tokens = Math.min(this.capacity(), this.tokens + ((start - this.last) * this.state.rate) / 1000);
      this.last = start;
    }
    this.tokens -= 1;
    const forTokens = this.tokens >= 0 ? 0 : Math.ceil((-this.tokens * 1000) / this.state.rate);
    return start - now + forTokens;
  }

  /**
   * Resolves when one more request may be sent, or as soon as `signal` aborts (a Retry-After may be
   * long, and a stopping daemon must not wait it out; the caller's request then fails as aborted).
   */
  acquire(signal?: AbortSignal): Promise<void> {
    const turn = this.queue.then(async () => {
      if (signal?.aborted) return;
      const wait = this.reserve();
      if (wait > 0) await untilAborted(this.sleep(wait, signal), signal);
    });
    this.queue = turn;
    return turn;
  }

  /** Feeds one answer back into the rate. */
  feedback(event: RateEvent): void {
    const before = this.state;
    this.state = nextRate(before, event, this.options.config);
    if (event.kind === 'limited') {
      // No saved-up burst right after a refusal, and nothing accrues while requests are forbidden.
      this.tokens = Math.min(this.tokens, 1);
      this.last = Math.max(this.last, this.state.notBefore);
    } else {
      this.tokens = Math.min(this.tokens, this.capacity());
    }
    if (this.state.rate !== before.rate) this.options.onChange?.(this.state.rate, event);
  }
}

/** setTimeout that an abort clears, so a stopped process is not kept alive by a long Retry-After. */
function timerSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => clearTimeout(timer);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', stop);
      resolve();
    }, ms);
    signal?.addEventListener('abort', stop, { once: true });
  });
}

/** Resolves when `wait` does or when `signal` aborts, whichever is first. */
function untilAborted(wait: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return wait;
  return new Promise((resolve) => {
    const done = () => {
      signal.removeEventListener('abort', done);
      resolve();
    };
    signal.addEventListener('abort', done, { once: true });
    void wait.then(done, done);
  });
}
