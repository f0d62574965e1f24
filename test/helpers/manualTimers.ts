import type { ManualClock } from '../../src/common/clock.js';
import type { PresenceTimers } from '../../src/postgres/presence.js';

/**
 * Timers that fire only when a test advances them, on a ManualClock: `advance(ms)` moves the clock
 * to each timer due within `ms` in turn (earliest first, timers set meanwhile included) and awaits
 * its work, so a test sees a period's effects when `advance` resolves, with no real time passing.
 */
export class ManualTimers implements PresenceTimers {
  private pending: Array<{ at: number; work: () => Promise<void> }> = [];

  constructor(readonly clock: ManualClock) {}

  after(ms: number, work: () => Promise<void>): () => void {
    const timer = { at: this.clock.now() + ms, work };
    this.pending.push(timer);
    return () => {
      this.pending = this.pending.filter((t) => t !== timer);
    };
  }

  /** How many timers are set and not fired. */
  get size(): number {
    return this.pending.length;
  }

  async advance(ms: number): Promise<void> {
    const end = this.clock.now() + ms;
    for (;;) {
      const next = this.pending.reduce<(typeof this.pending)[number] | undefined>(
        (first, t) => (t.at <= end && (!first || t.at < first.at) ? t : first),
        undefined,
      );
      if (!next) break;
      this.pending = this.pending.filter((t) => t !== next);
      this.clock.set(Math.max(this.clock.now(), next.at));
      await next.work();
    }
    this.clock.set(end);
  }
}
