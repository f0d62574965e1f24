import { type Clock, systemClock } from '../clock.js';

/**
 * A token bucket shared by every loop that calls the operator, so the sum of their requests stays
 * under the rate the operator granted at onboarding. Waiters are served in arrival order.
 */
export class RateLimiter {
  private tokens: number;
  private last: number;
  private readonly capacity: number;
  private queue: Promise<void> = Promise.resolve();

  /**
   * @param perSecond requests per second allowed on average
   * @param burst requests allowed at once after a quiet spell (default: perSecond, at least 1)
   */
  constructor(
    private readonly perSecond: number,
    burst?: number,
    private readonly clock: Clock = systemClock,
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
  ) {
    this.capacity = Math.max(1, burst ?? perSecond);
    this.tokens = this.capacity;
    this.last = clock.now();
  }

  /** Milliseconds to wait before one more request may go, taking it if none (pure bookkeeping). */
  reserve(): number {
    const now = this.clock.now();
    this.tokens = Math.min(this.capacity, this.tokens + ((now - this.last) * this.perSecond) / 1000);
    this.last = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens * 1000) / this.perSecond);
  }

  /** Resolves when one more request may be sent. */
  acquire(): Promise<void> {
    const turn = this.queue.then(async () => {
      const wait = this.reserve();
      if (wait > 0) await this.sleep(wait);
    });
    this.queue = turn;
    return turn;
  }
}
