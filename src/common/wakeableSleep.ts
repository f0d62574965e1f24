/**
 * The dispatcher's idle sleep: `wake()` cuts it short, and a wake that comes while nobody sleeps
 * makes the next sleep return at once, so a row enqueued between a claim and the sleep is not
 * left waiting a whole poll.
 */
export class WakeableSleep {
  private woken = false;
  private wakeUp: (() => void) | undefined;

  /** Ends the current sleep, or the next one before it starts. */
  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /** Sleeps up to `ms`; returns at once when woken since the last sleep or when `skip` is set. */
  sleep(ms: number, skip: boolean): Promise<void> {
    if (this.woken || skip) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        this.woken = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeUp = done;
    });
  }
}
