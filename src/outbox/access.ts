import { type Clock, isoAt } from '../common/clock.js';
import type { AppContext } from '../context.js';
import { type OperationsReads, operationsReads } from '../operations/operationsReads.js';
import type { OperationsStore } from '../operations/storeSeam.js';
import type { ScriptStore } from '../store/script.js';
import { answerExisting, type EnqueueResult, prepareInsert, type WakeDispatcher } from './prepareInsert.js';

/**
 * Where the API's operations routes and `vcu-sync enqueue` / `outbox` find the outbox: its reads,
 * its store (every write goes through the store's guarded transitions) and how one notification is
 * queued.
 */
export interface OutboxAccess {
  clock: Clock;
  reads: OperationsReads;
  store: OperationsStore;
  /**
   * Validates and queues one notification: the INSERT ... ON CONFLICT DO NOTHING is one
   * `store.insert` (its own transaction, with its feed row and deliveries; a 201 means it
   * committed), and a ref found queued already is read back to answer 200 (the same body again,
   * nothing changes) or 409 (another body); 422 with every field error. Exactly once per ref: the
   * ON CONFLICT waits for a concurrent insert of the ref to commit, so the read finds it.
   */
  enqueue(input: unknown, wake?: WakeDispatcher): Promise<EnqueueResult>;
}

/** How a store queues: its transaction's wait, and when the dispatcher is woken. */
export interface EnqueueOptions {
  /** How long the INSERT may wait for another process's lock before it is refused (TransactionOptions). */
  busyGraceMs?: number;
  /**
   * Wake the dispatcher as the INSERT is submitted, before its commit: where the commits of one turn
   * are grouped (SQLite's group commit), the claim it makes joins the same commit, after the INSERT
   * (one fsync for both; on a 200/409 the claim merely finds nothing new). Else on a 201, once
   * committed, so the claim finds the row.
   */
  wakeBeforeCommit: boolean;
}

/** The outbox over a store's scripts and its operations store, queuing as `options` say. */
export function outboxAccess(
  ctx: Pick<AppContext, 'clock' | 'config'>,
  scripts: ScriptStore,
  store: OperationsStore,
  options: EnqueueOptions,
): OutboxAccess {
  const reads = operationsReads(scripts);
  const early = options.wakeBeforeCommit;
  return {
    clock: ctx.clock,
    reads,
    store,
    async enqueue(input, wake) {
      const prepared = prepareInsert(ctx, input);
      if ('errors' in prepared) return prepared;
      const inserting = store.insert([prepared], isoAt(ctx.clock.now()), {
        busyGraceMs: options.busyGraceMs,
      });
      if (early) wake?.();
      const [inserted] = await inserting;
      if (!inserted) return answerExisting(prepared, await reads.byRef(prepared.ref));
      if (!early) wake?.();
      return { status: 201, row: inserted };
    },
  };
}
