/**
 * A count of requests the feed holds open (event streams, waiting long-polls), refused past `max`:
 * each costs a socket, a file descriptor and a little memory, so their number is bounded.
 */
export class OpenSlots {
  private held = 0;

  constructor(readonly max: number) {}

  /** How many are held now. */
  get open(): number {
    return this.held;
  }

  /** Takes a slot; false when all are taken (the caller answers 503 with Retry-After). */
  take(): boolean {
    if (this.held >= this.max) return false;
    this.held++;
    return true;
  }

  /** Gives a slot back. */
  give(): void {
    this.held = Math.max(0, this.held - 1);
  }
}

/** Seconds a refused client is told to wait before it asks again. */
export const BUSY_RETRY_AFTER_SECONDS = 5;
