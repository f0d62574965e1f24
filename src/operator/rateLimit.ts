import { type Clock, systemClock } from '../common/clock.js';
import { untilAborted } from '../common/linkedSignal.js';

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
 * The budget's layout: an Int32 lock and an Int32 "initialized" flag (bytes 0-7, where Float64 slot
 * 0 would be), then the bucket as Float64 slots 1-5.
 * Every read and change of the bucket happens under the lock, in a few arithmetic steps with no
 * await and no allocation, so a spin lock costs nothing measurable (a handful of threads, rarely
 * at the same instant).
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

/** The rate of a budget now (requests per second), or null before any limiter set it up. */
export function budgetRate(budget: SharedArrayBuffer): number | null {
  if (Atomics.load(new Int32Array(budget, 0, 2), READY) !== 1) return null;
  return new Float64Array(budget, 0, 6)[RATE]!;
}

/** Bursts hold at most one second of requests (at least one). */
function capacity(rate: number): number {
  return Math.max(1, rate);
}

/**
 * Milliseconds a request waits for its token once the bucket holds `tokensAfter` (pure): none while
 * it is not below zero; below, each waiter has reserved its place in time at `rate`.
 */
function tokenWait(tokensAfter: number, rate: number): number {
  return tokensAfter >= 0 ? 0 : Math.ceil((-tokensAfter * 1000) / rate);
}

/** The shared bucket: its fields under a lock any thread holding the same buffer respects. */
class SharedBucket {
  private readonly flags: Int32Array;
  readonly v: Float64Array;

  constructor(buffer: SharedArrayBuffer) {
    this.flags = new Int32Array(buffer, 0, 2);
    this.v = new Float64Array(buffer, 0, 6);
  }

  /**
   * Takes the lock. Another thread holds it for a few lines of arithmetic: try again. One that
   * held it for {@link LOCK_STALE_MS} ended in the middle (its thread was terminated): take it over,
   * rather than spin for ever; the worst a wrong guess costs is one miscounted token.
   */
  lock(): void {
    let since: number | undefined;
    for (let spins = 1; Atomics.compareExchange(this.flags, LOCK, 0, 1) !== 0; spins++) {
      if (spins % 1024 !== 0) continue;
      const now = Date.now();
      since ??= now;
      if (now - since > LOCK_STALE_MS) return;
    }
  }

  unlock(): void {
    Atomics.store(this.flags, LOCK, 0);
  }

  /** Fills the bucket unless a limiter did before (call under the lock). */
  initOnce(state: RateState, nowMs: number): void {
    if (Atomics.load(this.flags, READY) === 1) return;
    this.setState(state);
    this.v[TOKENS] = capacity(state.rate);
    this.v[LAST] = nowMs;
    Atomics.store(this.flags, READY, 1);
  }

  state(): RateState {
    const decreasedAt = this.v[DECREASED_AT]!;
    return {
      rate: this.v[RATE]!,
      decreasedAt: Number.isNaN(decreasedAt) ? null : decreasedAt,
      notBefore: this.v[NOT_BEFORE]!,
    };
  }

  setState(state: RateState): void {
    this.v[RATE] = state.rate;
    this.v[DECREASED_AT] = state.decreasedAt ?? Number.NaN;
    this.v[NOT_BEFORE] = state.notBefore;
  }
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
    this.bucket = new SharedBucket(options.budget ?? newRateBudget());
    this.bucket.lock();
    try {
      this.bucket.initOnce(initialRate(options.config), this.clock.now());
    } finally {
      this.bucket.unlock();
    }
  }

  /** Requests per second allowed now (the shared bucket's, when it is shared). */
  get rate(): number {
    return this.bucket.v[RATE]!;
  }

  /** The configured most. */
  get ceiling(): number {
    return this.options.config.ceiling;
  }

  /** Milliseconds to wait before one more request may go, taking its token. */
  reserve(): number {
    const now = this.clock.now();
    const b = this.bucket;
    const v = b.v;
    b.lock();
    try {
      const rate = v[RATE]!;
      const start = Math.max(now, v[NOT_BEFORE]!);
      if (start > v[LAST]!) {
        v[TOKENS] = Math.min(capacity(rate), v[TOKENS]! + ((start - v[LAST]!) * rate) / 1000);
        v[LAST] = start;
      }
      v[TOKENS] = v[TOKENS]! - 1;
      return start - now + tokenWait(v[TOKENS]!, rate);
    } finally {
      b.unlock();
    }
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
    const b = this.bucket;
    const v = b.v;
    let before: number;
    let after: number;
    b.lock();
    try {
      before = v[RATE]!;
      // At the ceiling a success changes nothing: no state to build (the common case).
      if (event.kind === 'ok' && before >= this.options.config.ceiling) return;
      const next = nextRate(b.state(), event, this.options.config);
      b.setState(next);
      after = next.rate;
      if (event.kind === 'limited') {
        // No saved-up burst right after a refusal, and nothing accrues while requests are forbidden.
        v[TOKENS] = Math.min(v[TOKENS]!, 1);
        v[LAST] = Math.max(v[LAST]!, next.notBefore);
      } else {
        v[TOKENS] = Math.min(v[TOKENS]!, capacity(after));
      }
    } finally {
      b.unlock();
    }
    if (after !== before) this.options.onChange?.(after, event);
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
