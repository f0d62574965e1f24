import type { Clock } from '../clock.js';
import { type OperationsReads, operationsReads } from '../operations/readsSeam.js';
import type { OperationsStore } from '../operations/storeSeam.js';
import { commitQueueFor } from '../sqlite/commitQueue.js';
import { SqliteOperationsStore } from '../sqlite/operationsStore.js';
import {
  type EnqueueContext,
  type EnqueueResult,
  enqueueOperation,
  enqueueOperationGrouped,
  type WakeDispatcher,
} from './enqueue.js';

/**
 * Where the API's operations routes and `vcu-sync enqueue` / `outbox` find the outbox: its reads,
 * its store (every write goes through the store's guarded transitions) and how one notification is
 * queued. SQLite's below; PostgreSQL's in pgAccess.ts (kept apart so `pg` stays out of SQLite runs).
 */
export interface OutboxAccess {
  clock: Clock;
  reads: OperationsReads;
  store: OperationsStore;
  /** Validates and queues one notification: 201 new, 200 same ref same body, 409 other body, 422. */
  enqueue(input: unknown, wake?: WakeDispatcher): Promise<EnqueueResult>;
}

/** Options of {@link sqliteOutbox}. */
export interface SqliteOutboxOptions {
  /**
   * Enqueue in the connection's group commit, a request refused after a short wait for another
   * process's lock (the API's path); false: its own commit, waiting `busy_timeout_ms` (the CLI's).
   * Default true.
   */
  grouped?: boolean;
}

/** The outbox on the context's SQLite database. */
export function sqliteOutbox(ctx: EnqueueContext, options: SqliteOutboxOptions = {}): OutboxAccess {
  const { sqlite } = ctx.database;
  return {
    clock: ctx.clock,
    reads: operationsReads(commitQueueFor(sqlite)),
    store: new SqliteOperationsStore(sqlite),
    enqueue:
      options.grouped === false
        ? async (input, wake) => enqueueOperation(ctx, input, wake)
        : (input, wake) => enqueueOperationGrouped(ctx, input, wake),
  };
}
