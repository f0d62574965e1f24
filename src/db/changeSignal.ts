/**
 * "The change feed grew": how readers of `changes` (long-polls, event streams) learn of a new row
 * without polling. It carries no data: a woken reader queries `seq > after` from the database, so a
 * spurious wake costs one indexed query and a missed one is impossible once the row is committed.
 *
 * Any change wakes every waiter. A waiter is one resolver in a Set (no timer, no polling): hundreds
 * of waiting clients cost their Set entries. Listeners see every announcement too: that is how a
 * worker thread forwards its commits to the main thread (feed/bridge.ts), and how a store shared
 * by processes feeds its notifications in. Each adapter keeps the signal of its handle.
 */
/**
 * Waiters woken per event-loop turn. A commit wakes every waiting reader, and each answers (a page
 * read from the shared cache, a socket write): 1,500 of them in one turn kept an enqueue or a
 * /healthz arriving meanwhile waiting ~100 ms. In batches, other requests are served between them.
 */
export const WAKE_BATCH = 100;

/**
 * A thread's message "the feed holds rows up to seq N" (feed/bridge.ts forwards it; the mirror's
 * thread, mirror/syncMessages.ts, sends it among its own): here so both import it downward.
 */
export interface FeedMessage {
  type: 'vcu-sync.feed';
  seq: number;
}

export class ChangeSignal {
  private waiters = new Set<() => void>();
  /** Woken by an announcement but not called yet: called WAKE_BATCH per turn. */
  private readonly waking = new Set<() => void>();
  private wakingScheduled = false;
  private readonly listeners = new Set<(seq: number) => void>();
  /** Counts announcements, so a reader can tell whether one came since it last looked. */
  private announced = 0;

  /** How many announcements so far: take it before querying, pass it to {@link whenChanged}. */
  get version(): number {
    return this.announced;
  }

  /** How many waiters are parked now (for tests and metrics). */
  get waiting(): number {
    return this.waiters.size;
  }

  /**
   * Says the feed holds rows up to `seq` (committed): wakes every waiter (the first WAKE_BATCH at
   * once, the rest over the next turns), tells every listener.
   */
  announce(seq: number): void {
    this.announced++;
    const woken = this.waiters;
    this.waiters = new Set();
    for (const wake of woken) this.waking.add(wake);
    this.wakeBatch();
    for (const listener of this.listeners) listener(seq);
  }

  /**
   * Calls up to WAKE_BATCH woken waiters, and schedules the next batch after the loop's I/O. A
   * waiter removed meanwhile (unpark, abort) is still called: its announcement came, and a stream
   * woken by something else would otherwise miss it (a spurious wake only costs a read).
   */
  private wakeBatch(): void {
    let n = 0;
    for (const wake of this.waking) {
      if (n++ >= WAKE_BATCH) break;
      this.waking.delete(wake);
      wake();
    }
    if (this.waking.size > 0 && !this.wakingScheduled) {
      this.wakingScheduled = true;
      setImmediate(() => {
        this.wakingScheduled = false;
        this.wakeBatch();
      });
    }
  }

  /**
   * Resolves `true` at the next announcement after `version` (at once when one came already),
   * `false` when `signal` aborts first (the request's own timeout or the client's disconnect). The
   * waiter is removed either way.
   */
  whenChanged(version: number, signal: AbortSignal): Promise<boolean> {
    if (this.announced !== version) return Promise.resolve(true);
    if (signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const wake = () => {
        signal.removeEventListener('abort', abort);
        resolve(true);
      };
      const abort = () => {
        this.waiters.delete(wake);
        resolve(false);
      };
      this.waiters.add(wake);
      signal.addEventListener('abort', abort, { once: true });
    });
  }

  /**
   * Calls `wake` once at the next announcement after `version` (at once when one came already):
   * a waiter with no promise and no abort signal, for a loop that waits again and again with the
   * same function (feed/stream.ts: a thousand streams woken by every commit allocate nothing to
   * wait). {@link unpark} removes it when the loop is woken by something else.
   */
  park(version: number, wake: () => void): void {
    if (this.announced !== version) wake();
    else this.waiters.add(wake);
  }

  /** Removes a parked `wake` (no effect if it was woken already). */
  unpark(wake: () => void): void {
    this.waiters.delete(wake);
  }

  /** Calls `listener(seq)` on every announcement; returns the unsubscribe. */
  listen(listener: (seq: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
