import { commitQueueFor, type SubmitOptions } from '../db/commitQueue.js';
import type { Sqlite } from '../db/open.js';
import { nextDueAt } from './reads.js';
import type { OperationRow } from './rows.js';
import type { OperationState } from './states.js';
import {
  type AttemptRecord,
  type Claim,
  type ClaimParams,
  cancelOperation,
  claimOperations,
  expedite,
  insertOperation,
  type NewOperation,
  recordDecision,
  releaseAllClaims,
  releaseClaim,
  retryFailed,
  type SettleStep,
  settleAttempt,
} from './store.js';
import type { DecisionRecord, OperationsStore } from './storeSeam.js';

/**
 * The dispatcher's claims, settles and releases go on once committed, without waiting for the
 * commit's fsync: a power loss that takes one back only sends its row again (at-least-once, as
 * after any crash). A send slot waiting for an fsync after each answer halved the drain rate
 * against a bare POST loop (an fsync here costs as much as the operator's answer). What others
 * learn of them still waits for it: feed readers are woken once it is durable (db/changeSignal.ts).
 */
export const DISPATCHER_WORK: SubmitOptions = { durable: false };

/**
 * The operations store seam on SQLite: the synchronous functions of store.ts, unchanged, each call
 * one job of the connection's group commit (so it commits with its neighbours, in one transaction
 * of its own as far as atomicity goes).
 */
export class SqliteOperationsStore implements OperationsStore {
  constructor(private readonly sqlite: Sqlite) {}

  private submit<T>(work: () => T, options?: SubmitOptions): Promise<T> {
    return commitQueueFor(this.sqlite).submit(work, options);
  }

  insert(ops: readonly NewOperation[], nowIso: string): Promise<OperationRow[]> {
    return this.submit(() =>
      ops.flatMap((op) => {
        const row = insertOperation(this.sqlite, op, nowIso);
        return row ? [row] : [];
      }),
    );
  }

  claim(params: ClaimParams | (() => ClaimParams)): Promise<OperationRow[]> {
    return this.submit(
      () => claimOperations(this.sqlite, typeof params === 'function' ? params() : params),
      DISPATCHER_WORK,
    );
  }

  settle(claim: Claim, attempt: AttemptRecord, step: SettleStep): Promise<boolean> {
    return this.submit(() => settleAttempt(this.sqlite, claim, attempt, step), DISPATCHER_WORK);
  }

  release(claim: Claim): Promise<boolean> {
    return this.submit(() => releaseClaim(this.sqlite, claim), DISPATCHER_WORK);
  }

  releaseAll(nowIso: string): Promise<Array<{ id: number; ref: string }>> {
    return this.submit(() => releaseAllClaims(this.sqlite, nowIso));
  }

  /** One daemon owns a SQLite file: every claimant other than the running one is dead. */
  releaseDead(nowIso: string): Promise<Array<{ id: number; ref: string }>> {
    return this.releaseAll(nowIso);
  }

  recordDecision(d: DecisionRecord): Promise<boolean> {
    return this.submit(() => recordDecision(this.sqlite, d));
  }

  retryFailed(op: { id: number; ref: string }, nowIso: string): Promise<boolean> {
    return this.submit(() => retryFailed(this.sqlite, op, nowIso));
  }

  expedite(id: number, nowIso: string): Promise<boolean> {
    return this.submit(() => expedite(this.sqlite, id, nowIso));
  }

  cancel(op: { id: number; ref: string; from: OperationState }, nowIso: string): Promise<boolean> {
    return this.submit(() => cancelOperation(this.sqlite, op, nowIso));
  }

  nextDueAt(): Promise<string | null> {
    return Promise.resolve(nextDueAt(this.sqlite));
  }
}
