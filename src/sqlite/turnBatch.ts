import type { TransactionOptions } from '../store/script.js';
import type { CommitQueue } from './commitQueue.js';
import type { Sqlite } from './open.js';

/** How a batch runs its calls, synchronously inside the group commit's transaction. */
export interface BatchRunner<I, R> {
  /** All the calls at once (one script for the group); throws to fall back to {@link one}. */
  many: (items: readonly I[]) => R[];
  /** One call alone: the fallback, each in a savepoint of its own. */
  one: (item: I) => R;
}

type Result<R> = { ok: true; value: R } | { ok: false; error: unknown };

interface Waiting<I, R> {
  item: I;
  resolve: (value: R) => void;
  reject: (err: unknown) => void;
}

/**
 * Calls of one kind made while a group commit is pending (the dispatcher's settles of the sends
 * answered in one turn, their refill claims), run as ONE job of the connection's group commit:
 * one script, one savepoint, one feed append and one subscriber match for the group instead of one
 * per row. The job takes every call made before it runs, so a call joins the group commit it
 * would have joined alone, only earlier within it (all commit together or not at all). Should the
 * batch fail, each call runs again alone in a savepoint of its own, so one failing call does not
 * take its neighbours down (./commitQueue.ts gives each job the same isolation).
 */
export class TurnBatch<I, R> {
  private pending: Waiting<I, R>[] | null = null;
  private readonly inSavepoint: <T>(run: () => T) => T;

  constructor(
    private readonly sqlite: Sqlite,
    private readonly queue: Pick<CommitQueue, 'submit'>,
    private readonly runner: BatchRunner<I, R>,
    private readonly options: TransactionOptions,
  ) {
    // A transaction function called inside the group's transaction is a savepoint.
    const savepoint = sqlite.transaction((run: () => unknown) => run());
    this.inSavepoint = <T>(run: () => T) => savepoint(run) as T;
  }

  /** Joins the pending group's call, or starts one; resolves once its commit holds the call. */
  add(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      if (this.pending) {
        this.pending.push({ item, resolve, reject });
        return;
      }
      const group: Waiting<I, R>[] = [{ item, resolve, reject }];
      this.pending = group;
      const job = () => {
        // Calls made from now on go to the next group (a busy retry may run this again: nothing ran).
        if (this.pending === group) this.pending = null;
        return this.runAll(group.map((w) => w.item));
      };
      this.queue.submit(job, this.options).then(
        (results) =>
          results.forEach((r, i) => {
            if (r.ok) group[i]!.resolve(r.value);
            else group[i]!.reject(r.error);
          }),
        (err: unknown) => {
          for (const w of group) w.reject(err);
        },
      );
    });
  }

  private runAll(items: readonly I[]): Result<R>[] {
    if (items.length === 1) return [{ ok: true, value: this.runner.one(items[0]!) }];
    try {
      return this.inSavepoint(() => this.runner.many(items)).map((value) => ({ ok: true, value }));
    } catch (err) {
      // The whole transaction lost (SQLITE_FULL, I/O): the group commit reports it for every job.
      if (!this.sqlite.inTransaction) throw err;
    }
    return items.map((item): Result<R> => {
      try {
        return { ok: true, value: this.inSavepoint(() => this.runner.one(item)) };
      } catch (error) {
        if (!this.sqlite.inTransaction) throw error;
        return { ok: false, error };
      }
    });
  }
}
