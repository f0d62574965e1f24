import type { TransactionOptions } from '../store/script.js';
import type { LedgerFields } from './ledger.js';
import type { OperationRow } from './rows.js';
import type { OperationState } from './states.js';

/** A validated notification to queue. */
export interface NewOperation {
  ref: string;
  /** The operation type as sent to the operator. */
  operationType: string;
  orderKey: string | null;
  /** The body sent on every attempt. */
  body: string;
  /** Hash of the validated input (tells a repeat from a conflicting body). */
  hash: string;
  /**
   * What the reconciliation's ledger keeps of it, read from the notification when it was validated:
   * written beside the row (default: none; the reconciler's catch-up reads it from the body later).
   */
  ledger?: LedgerFields;
}

/** What a claim needs: who claims, the time, the lease's end (ISO) and how many rows at most. */
export interface ClaimParams {
  owner: string;
  now: string;
  leaseUntil: string;
  limit: number;
}

/** A claimed row, named by its claimant. */
export interface Claim {
  id: number;
  ref: string;
  /** The lease owner. */
  owner: string;
  now: string;
}

/** What an attempt's answer moves its row to (see outbox/nextStep.ts). */
export type SettleStep =
  | { to: 'accepted'; response: string; status: number }
  | { to: 'queued'; nextAttemptAt: string; error: string; status: number | null; refund: boolean }
  | { to: 'failed'; error: string; status: number | null };

/** One delivery attempt, for the attempt log. */
export interface AttemptRecord {
  startedAt: string;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
}

/** A row's texts with personal data replaced or masked (see outbox/scrub.ts); no state change. */
export interface ScrubbedTexts {
  id: number;
  body: string;
  response: string | null;
  lastError: string | null;
  decisionReason: string | null;
  /** Attempts whose error text changed, with the new text. */
  attemptErrors: ReadonlyArray<{ id: number; error: string | null }>;
}

/** An operator decision to record on an operation. */
export interface DecisionRecord {
  id: number;
  ref: string;
  decision: 'approved' | 'rejected';
  reason: string | null;
  now: string;
}

/**
 * The operations store at batch granularity, the same on both dialects: each call is one
 * transaction (on SQLite, one job of the connection's group commit; on PostgreSQL, one
 * transaction). Every state change commits with its feed rows and subscribers' deliveries,
 * and the compare-and-swap guards come from the one transition table (states.ts via rows.ts).
 * One implementation (scriptedStore.ts) over either store's scripts.
 */
export interface OperationsStore {
  /** Queues new operations; a ref already queued is left as it is and not returned. */
  insert(ops: readonly NewOperation[], nowIso: string, options?: TransactionOptions): Promise<OperationRow[]>;
  /**
   * Claims up to `limit` claimable rows, oldest first, never ahead of an older unsettled row of the
   * same order key. Given a function, the parameters are taken when the claim runs (inside its
   * transaction): it may first wait for a lock or a connection, and `now` and the lease's end must
   * not be older than the claim itself.
   */
  claim(params: ClaimParams | (() => ClaimParams)): Promise<OperationRow[]>;
  /** Logs the attempt and moves its row to `step` if the claim still holds; false when it does not. */
  settle(claim: Claim, attempt: AttemptRecord, step: SettleStep): Promise<boolean>;
  /** Hands one claimed row back unsent (attempt not counted). */
  release(claim: Claim): Promise<boolean>;
  /** Hands back every claimed row whoever holds it (only when every claimant is known dead). */
  releaseAll(nowIso: string): Promise<Array<{ id: number; ref: string }>>;
  recordDecision(d: DecisionRecord): Promise<boolean>;
  retryFailed(op: { id: number; ref: string }, nowIso: string): Promise<boolean>;
  expedite(id: number, nowIso: string): Promise<boolean>;
  cancel(op: { id: number; ref: string; from: OperationState }, nowIso: string): Promise<boolean>;
  /** The earliest time a queued row becomes due (ISO), or null. */
  nextDueAt(): Promise<string | null>;
}
