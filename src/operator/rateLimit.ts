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
  /**
   * Where the bucket lives: a {@link newRateBudget} buffer shared with the limiters of other
   * threads, so that all of them together keep to one rate (default: a budget of this limiter's own).
   */
  budget?: SharedArrayBuffer;
  /** (default: the system clock) */
  clock?: Clock;
  /** How to wait; tests pass one that moves their clock (default: setTimeout). */
  sleep?: (ms: number) => Promise<void>;
  /** Told the new rate whenever it changes, with the event that changed it (default: none). */
  onChange?: (rate: number, event: RateEvent) => void;
}

/*
 * The budget's layout: an Int32 lock and an Int32 "initialized" flag, then the bucket as Float64s.
 * Every read and change of the bucket happens under the lock, in a few arithmetic steps with no
 * await, so a spin lock costs nothing measurable (contention is a handful of threads, rarely).
 */
const LOCK = 0;
const READY = 1;
const RATE = 1;
const DECREASED_AT = 2;
const NOT_BEFORE = 3;
const TOKENS = 4;
const LAST = 5;
const BUDGET_BYTES = 6 * 8;
/** A lock held this long was left by a thread that ended holding it, ms. */
const LOCK_STALE_MS = 1_000;

/**
 * A bucket's shared memory, not yet filled: the first limiter that uses it sets it up from its own
 * config (every thread of a daemon has the same). Handed to worker threads in their settings.
 */
export function newRateBudget(): SharedArrayBuffer {
  return new SharedArrayBuffer(BUDGET_BYTES);
}

/** The bucket itself: what {@link RateState} holds, plus the tokens and when they were last counted. */
export interface Bucket {
  state: RateState;
  tokens: number;
  last: number;
}

/** Reads and writes a budget's bucket under its lock. */
class SharedBucket {
  private readonly flags: Int32Array;
  private readonly values: Float64Array;

  constructor(buffer: SharedArrayBuffer, init: () => Bucket) {
    this.flags = new Int32Array(buffer, 0, 2);
    this.values = new Float64Array(buffer, 0, 6);
    this.update((bucket) => bucket, init);
  }

  /** Runs `change` on the bucket under the lock and stores what it returns; returns its result too. */
  update<T>(change: (bucket: Bucket) => Bucket & { result?: T }, init?: () => Bucket): T | undefined {
    this.lock();
    try {
      const current = Atomics.load(this.flags, READY) === 1 ? this.read() : init?.();
      if (!current) throw new Error('rate budget used before any limiter set it up');
      const next = change(current);
      this.write(next);
      Atomics.store(this.flags, READY, 1);
      return next.result;
    } finally {
      Atomics.store(this.flags, LOCK, 0);
    }
  }

  /**
   * Takes the lock. Another thread holds it for a few lines of arithmetic: try again. One that
   * held it for {@link LOCK_STALE_MS} ended in the middle (its thread was terminated): take it over,
   * rather than spin for ever; the worst a wrong guess costs is one miscounted token.
   */
  private lock(): void {
    let since: number | undefined;
    for (let spins = 1; Atomics.compareExchange(this.flags, LOCK, 0, 1) !== 0; spins++) {
      if (spins % 1024 !== 0) continue;
      const now = Date.now();
      since ??= now;
      if (now - since > LOCK_STALE_MS) return;
    }
  }

  private read(): Bucket {
    const v = this.values;
    const decreasedAt = v[DECREASED_AT]!;
    return {
      state: {
        rate: v[RATE]!,
        decreasedAt: Number.isNaN(decreasedAt) ? null : decreasedAt,
        notBefore: v[NOT_BEFORE]!,
      },
      tokens: v[TOKENS]!,
      last: v[LAST]!,
    };
  }

  private write(bucket: Bucket): void {
    const v = this.values;
    v[RATE] = bucket.state.rate;
    v[DECREASED_AT] = bucket.state.decreasedAt ?? Number.NaN;
    v[NOT_BEFORE] = bucket.state.notBefore;
    v[TOKENS] = bucket.tokens;
    v[LAST] = bucket.last;
  }
}

/** Bursts hold at most one second of requests (at least one). */
function capacity(state: RateState): number {
  return Math.max(1, state.rate);
}

/**
 * Takes one token at `now` (pure): the bucket after, and the milliseconds to wait before the
 * request may leave. Tokens may go below zero: each waiter has reserved its place in time.
 */
export function reserveToken(bucket: Bucket, now: number): Bucket & { result: number } {
  const { state } = bucket;
  const start = Math.max(now, state.notBefore);
  let { tokens, last } = bucket;
  if (start > last) {
    tokens = Math.min(capacity(state), tokens + ((start - last) * state.rate) / 1000);
    last = start;
  }
  tokens -= 1;
  const forTokens = tokens >= 0 ? 0 : Math.ceil((-tokens * 1000) / state.rate);
  return { state, tokens, last, result: start - now + forTokens };
}

/** The bucket after one answer (pure): the rate follows {@link nextRate}. */
export function bucketAfter(bucket: Bucket, event: RateEvent, config: RateConfig): Bucket {
  const state = nextRate(bucket.state, event, config);
  if (event.kind === 'limited') {
    // No saved-up burst right after a refusal, and nothing accrues while requests are forbidden.
    return { state, tokens: Math.min(bucket.tokens, 1), last: Math.max(bucket.last, state.notBefore) };
  }
  return { state, tokens: Math.min(bucket.tokens, capacity(state)), last: bucket.last };
}

/**
 * A token bucket shared by every loop that calls the operator, so the sum of their requests stays
 * under the rate the operator accepts; its rate follows {@link nextRate}. Limiters of several threads
 * given the same `budget` share one bucket, and so one rate: a 429 seen by one slows all. Waiters of
 * one limiter are served in arrival order. Bursts hold at most one second of requests (at least one).
 */
export class RateLimiter {
  private readonly bucket: SharedBucket;
  private queue: Promise<void> = Promise.resolve();
  private readonly clock: Clock;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(private readonly options: RateLimiterOptions) {
    this.clock = options.clock ?? systemClock;
    this.sleep = options.sleep ?? timerSleep;
    this.bucket = new SharedBucket(options.budget ?? newRateBudget(), () => {
      const state = initialRate(options.config);
      return { state, tokens: capacity(state), last: this.clock.now() };
    });
  }

  /** Requests per second allowed now (the shared bucket's, when it is shared). */
  get rate(): number {
    return this.bucket.update((b) => ({ ...b, result: b.state.rate })) ?? this.options.config.ceiling;
  }

  /** The configured most. */
  get ceiling(): number {
    return this.options.config.ceiling;
  }

  /** Milliseconds to wait before one more request may go, taking its token. */
  reserve(): number {
    const now = this.clock.now();
    return this.bucket.update((b) => reserveToken(b, now)) ?? 0;
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
    const rates = this.bucket.update((b) => {
      const next = bucketAfter(b, event, this.options.config);
      return { ...next, result: [b.state.rate, next.state.rate] as const };
    });
    if (rates && rates[0] !== rates[1]) this.options.onChange?.(rates[1], event);
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
