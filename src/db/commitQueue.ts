/**
 * Group commit: writes submitted in the same turn of the event loop (enqueues from the API, the
 * dispatcher's claims and settles, webhooks) are stored in one SQLite transaction, so a burst costs
 * one fsync instead of one per write. Each task still runs in its own savepoint, so one failing task
 * does not take its neighbours down; every caller's promise settles only after the commit that holds
 * its work (a 201 or a webhook 2xx only after the write is durable).
 */
import type { Sqlite } from './open.js';

interface Task {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Runs synchronous database work in shared transactions. */
export class CommitQueue {
  private tasks: Task[] = [];
  private scheduled = false;
  private readonly inSavepoint: (run: () => unknown) => unknown;
  private readonly batch: { immediate: (tasks: readonly Task[]) => Settled[] };

  /**
   * @param sqlite the database handle
   * @param maxBatch most tasks per transaction, bounding how long one commit holds the loop (default: 256)
   */
  constructor(
    sqlite: Sqlite,
    private readonly maxBatch = 256,
  ) {
    // A transaction function called inside another becomes a savepoint.
    this.inSavepoint = sqlite.transaction((run: () => unknown) => run());
    this.batch = sqlite.transaction((tasks: readonly Task[]) =>
      tasks.map((task): Settled => {
        try {
          return { ok: true, value: this.inSavepoint(task.run) };
        } catch (error) {
          return { ok: false, error };
        }
      }),
    );
  }

  /** Runs `run` (synchronous, no awaits) in the next group transaction; resolves after its commit. */
  submit<T>(run: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.tasks.push({ run, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const tasks = this.tasks.splice(0, this.maxBatch);
    if (this.tasks.length > 0) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
    let results: Settled[];
    try {
      // IMMEDIATE: take the write lock up front, so reading then writing cannot deadlock with another process.
      results = this.batch.immediate(tasks);
    } catch (error) {
      for (const task of tasks) task.reject(error);
      return;
    }
    tasks.forEach((task, i) => {
      const result = results[i]!;
      if (result.ok) task.resolve(result.value);
      else task.reject(result.error);
    });
  }
}

const shared = new WeakMap<Sqlite, CommitQueue>();

/**
 * The one commit queue of a connection: everything a daemon writes on the event loop shares it, so
 * an API enqueue, a dispatcher settle and a webhook arriving in the same turn cost one fsync together.
 */
export function commitQueueFor(sqlite: Sqlite): CommitQueue {
  let queue = shared.get(sqlite);
  if (!queue) {
    queue = new CommitQueue(sqlite);
    shared.set(sqlite, queue);
  }
  return queue;
}
