import type { Script, ScriptStore, TransactionOptions } from '../store/script.js';
import { claimOperations } from './claim.js';
import type { StateChangeSink } from './effects.js';
import type { OperationRow } from './rows.js';
import type { OperationState } from './states.js';
import type {
  AttemptRecord,
  Claim,
  ClaimParams,
  DecisionRecord,
  NewOperation,
  OperationsStore,
  SettleStep,
} from './storeSeam.js';
import {
  cancelOperation,
  decide,
  expedite,
  insertOperations,
  NEXT_DUE_AT,
  releaseClaim,
  releaseOwnedBy,
  retryFailed,
  settleAttempt,
} from './transitions.js';

/** Options of {@link ScriptedOperationsStore}. */
export interface ScriptedOperationsStoreOptions {
  /**
   * What each state change writes besides the feed (effects.ts), read at each call: a SQLite
   * handle may be handed its sink after the store is made (default: nothing).
   */
  sink?: () => StateChangeSink | undefined;
  /** How the dispatcher's claims, settles and releases wait for their commit (default: as any other). */
  dispatcherWork?: TransactionOptions;
}

/**
 * The operations store over either store's scripts (store/script.ts): each call is one of the
 * transitions (transitions.ts) in one transaction. A store one process owns (SQLite) uses it as it
 * is; where processes share the store, postgres/operationsStore.ts locks order keys, groups the
 * dispatcher's claims and settles and knows which claimants are dead.
 */
export class ScriptedOperationsStore implements OperationsStore {
  constructor(
    protected readonly scripts: ScriptStore,
    private readonly options: ScriptedOperationsStoreOptions = {},
  ) {}

  protected get sink(): StateChangeSink | undefined {
    return this.options.sink?.();
  }

  private dispatcher<T>(script: Script<T>): Promise<T> {
    return this.scripts.transaction(script, this.options.dispatcherWork);
  }

  insert(
    ops: readonly NewOperation[],
    nowIso: string,
    options?: TransactionOptions,
  ): Promise<OperationRow[]> {
    if (ops.length === 0) return Promise.resolve([]);
    return this.scripts.transaction(this.inserting(ops, nowIso), options);
  }

  /** The insert's script (where processes share the store, the adapter takes its locks first). */
  protected inserting(ops: readonly NewOperation[], nowIso: string): Script<OperationRow[]> {
    return insertOperations(ops, nowIso, this.sink);
  }

  claim(params: ClaimParams | (() => ClaimParams)): Promise<OperationRow[]> {
    const shared = this.scripts.dialect.capabilities.sharedByProcesses;
    return this.dispatcher(claimOperations(params, this.sink, shared));
  }

  settle(claim: Claim, attempt: AttemptRecord, step: SettleStep): Promise<boolean> {
    return this.dispatcher(settleAttempt(claim, attempt, step, this.sink));
  }

  release(claim: Claim): Promise<boolean> {
    return this.dispatcher(releaseClaim(claim, this.sink));
  }

  releaseAll(nowIso: string): Promise<Array<{ id: number; ref: string }>> {
    return this.scripts.transaction(releaseOwnedBy(null, nowIso, this.sink));
  }

  recordDecision(d: DecisionRecord): Promise<boolean> {
    return this.scripts.transaction(decide(d, this.sink));
  }

  retryFailed(op: { id: number; ref: string }, nowIso: string): Promise<boolean> {
    return this.scripts.transaction(retryFailed(op, nowIso, this.sink));
  }

  expedite(id: number, nowIso: string): Promise<boolean> {
    return this.scripts.transaction(expedite(id, nowIso));
  }

  cancel(op: { id: number; ref: string; from: OperationState }, nowIso: string): Promise<boolean> {
    return this.scripts.transaction(cancelOperation(op, nowIso, this.sink));
  }

  async nextDueAt(): Promise<string | null> {
    const [row] = await this.scripts.read<{ at: string | null }>(NEXT_DUE_AT);
    return row?.at ?? null;
  }
}
