/**
 * The operator's own rate limit, as API gateways enforce it: a token bucket of `perSecond` requests
 * per second holding at most `burst`; a request beyond it is answered 429 with a Retry-After (whole
 * seconds, as the header's delta-seconds form allows) and costs nothing. Time comes from a clock,
 * so a test can move it instead of waiting.
 */
import { type Clock, systemClock } from '../common/clock.js';

/** The limit: requests per second, and how many may come at once after a quiet spell. */
export interface RateLimitOptions {
  /** Requests per second admitted on average. */
  perSecond: number;
  /** Requests admitted at once after a quiet spell (default: perSecond, at least 1). */
  burst?: number;
}

export type Admission = { ok: true } | { ok: false; retryAfterSec: number };

export class RequestRateLimit {
  private tokens: number;
  private last: number;
  private readonly capacity: number;
  /** Requests admitted and refused so far. */
  admitted = 0;
  refused = 0;

  constructor(
    readonly options: RateLimitOptions,
    private readonly clock: Clock = systemClock,
  ) {
    if (!(options.perSecond > 0)) throw new Error('rate limit: perSecond must be positive');
    this.capacity = Math.max(1, options.burst ?? options.perSecond);
    this.tokens = this.capacity;
    this.last = clock.now();
  }

  /** Admits one request now, or says how long to wait. */
  admit(): Admission {
    const now = this.clock.now();
    if (now > this.last) {
      this.tokens = Math.min(
        this.capacity,
        this.tokens + ((now - this.last) * this.options.perSecond) / 1000,
      );
      this.last = now;
    }
    if (this.tokens >= 1) {
      this.tokens -= 1;
      this.admitted++;
      return { ok: true };
    }
    this.refused++;
    const waitMs = ((1 - this.tokens) * 1000) / this.options.perSecond;
    return { ok: false, retryAfterSec: Math.max(1, Math.ceil(waitMs / 1000)) };
  }
}
