import type pg from 'pg';
import type { AppContext } from '../context.js';
import type { StateChangeSink } from '../operations/effects.js';
import { PgOperationsStore } from '../operations/pgStore.js';
import { operationsReads } from '../operations/readsSeam.js';
import { postgresScriptStore } from '../store/postgresScripts.js';
import type { OutboxAccess } from './access.js';
import { enqueueThrough } from './enqueue.js';

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
