import type { Clock } from '../clock.js';
import type { AppContext } from '../context.js';
import { type OperationsReads, operationsReads } from '../operations/reads.js';
import type { OperationsStore } from '../operations/storeSeam.js';
import type { ScriptStore } from '../store/script.js';
import { type EnqueueOptions, type EnqueueResult, enqueueThrough, type WakeDispatcher } from './enqueue.js';

/**
 * Where the API's operations routes and `vcu-sync enqueue` / `outbox` find the outbox: its reads,
 * its store (every write goes through the store's guarded transitions) and how one notification is
 * queued.
 */
export interface OutboxAccess {
  clock: Clock;
  reads: OperationsReads;
  store: OperationsStore;
  /** Validates and queues one notification: 201 new, 200 same ref same body, 409 other body, 422. */
  enqueue(input: unknown, wake?: WakeDispatcher): Promise<EnqueueResult>;
}

/** The outbox over a store's scripts and its operations store, queuing as `options` say. */
export function outboxAccess(
  ctx: Pick<AppContext, 'clock' | 'config'>,
  scripts: ScriptStore,
  store: OperationsStore,
  options: EnqueueOptions,
): OutboxAccess {
  const reads = operationsReads(scripts);
  return {
    clock: ctx.clock,
    reads,
    store,
    enqueue: (input, wake) => enqueueThrough(ctx, { store, reads }, input, options, wake),
  };
}
