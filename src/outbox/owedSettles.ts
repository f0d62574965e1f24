import type { Logger } from '../common/log.js';
import type { OperationRow } from '../operations/rows.js';
import { logSettleError } from './settleEffects.js';

/**
 * Settles still owed after the operator answered: their first try failed (the row locked by
 * another transaction, the store away), so they go on in the background while the send's slot
 * takes the next row (outbox/settle.ts `settleDurably`). Each holds its unit's next operation back
 * while its row is `sending`, so when the store works again they try at once ({@link retryNow})
 * rather than at their backoff's next step, up to 5 s away. A stop waits for them ({@link all}).
 */
export class OwedSettles {
  private readonly owed = new Set<Promise<void>>();
  /** Aborted, and replaced, when the store works again. */
  private back = new AbortController();

  constructor(private readonly log: Logger) {}

  /** What a waiting settle's backoff sleep also ends on (read at each sleep: it is replaced). */
  readonly retrySignal = (): AbortSignal => this.back.signal;

  /** The store works again: every owed settle tries now. */
  retryNow(): void {
    const back = this.back;
    this.back = new AbortController();
    back.abort();
  }

  /** Follows `row`'s settle to its end in the background; a failure is logged as the send's own would be. */
  track(row: OperationRow, finished: Promise<{ err: unknown } | null>): void {
    const task = finished.then((failed) => {
      if (failed) logSettleError(this.log, row, failed.err);
    });
    this.owed.add(task);
    void task.finally(() => this.owed.delete(task));
  }

  get size(): number {
    return this.owed.size;
  }

  /** The settles owed now. */
  all(): Promise<void>[] {
    return [...this.owed];
  }
}
