import { commitQueueFor } from '../db/commitQueue.js';
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
 * The operations store seam on SQLite: the synchronous functions of store.ts, unchanged, each call
 * one job of the connection's group commit (so it commits with its neighbours, in one transaction
 * of its own as far as atomicity goes).
 */
export class SqliteOperationsStore implements OperationsStore {
  constructor(private readonly sqlite: Sqlite) {}

  private submit<T>(work: () => T): Promise<T> {
    return commitQueueFor(this.sqlite).submit(work);
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
    return this.submit(() => claimOperations(this.sqlite, typeof params === 'function' ? params() : params));
  }

  settle(claim: Claim, attempt: AttemptRecord, step: SettleStep): Promise<boolean> {
    return this.submit(() => settleAttempt(this.sqlite, claim, attempt, step));
  }

  release(claim: Claim): Promise<boolean> {
    return this.submit(() => releaseClaim(this.sqlite, claim));
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
