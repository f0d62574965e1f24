import type pg from 'pg';
import type { AppContext } from '../context.js';
import type { StateChangeSink } from '../operations/effects.js';
import { operationsReads } from '../operations/readsSeam.js';
import type { OutboxAccess } from '../outbox/access.js';
import { enqueueThrough } from '../outbox/enqueue.js';
import { PgOperationsStore } from './operationsStore.js';
import { postgresScriptStore } from './scripts.js';

/** Options of {@link pgOutbox}. */
export interface PgOutboxOptions {
  /** The store's lease owner (it never claims here: only `releaseDead` reads it). */
  leaseOwner: string;
  /** What each state change writes besides the feed (default: nothing): the root's sink. */
  onStateChange?: StateChangeSink;
}

/** The outbox on PostgreSQL: the pg reads and store; an enqueue is one `store.insert`. */
export function pgOutbox(
  ctx: Pick<AppContext, 'clock' | 'config'>,
  pool: pg.Pool,
  options: PgOutboxOptions,
): OutboxAccess {
  const reads = operationsReads(postgresScriptStore(pool));
  const store = new PgOperationsStore(pool, {
    leaseOwner: options.leaseOwner,
    onStateChange: options.onStateChange,
  });
  return {
    clock: ctx.clock,
    reads,
    store,
    enqueue: (input, wake) => enqueueThrough(ctx, { store, reads }, input, wake),
  };
}
