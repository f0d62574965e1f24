import { isoAt } from '../clock.js';
import type { Sqlite } from '../db/open.js';
import { applyPendingDecisions, type DecisionEffect } from '../inbox/correlate.js';
import { maskEventsOf } from '../inbox/mask.js';
import type { Logger } from '../log.js';
import { type Masker, maskReceived, personalMasker, personalValuesOf } from '../operations/personal.js';
import type { OperationRow } from '../operations/rows.js';
import { type SettleStep, settleAttempt as storeAttempt } from '../operations/store.js';
import { OperatorError } from '../operator/errors.js';
import type { AttemptOutcome, NextStep } from './nextStep.js';

const EXCERPT = 500;

/** One finished attempt and the step decided for its row. */
export interface SettledAttempt {
  row: OperationRow;
  outcome: AttemptOutcome;
  next: NextStep;
  /** The lease owner settling the row. */
  owner: string;
  nowIso: string;
  startedMs: number;
  durationMs: number;
}

/** What a settle came to: whether this owner still held the lease, and the decisions it applied. */
export interface SettleResult {
  settled: boolean;
  effects: DecisionEffect[];
}

/**
 * Masks the row's personal values (in every encoding) out of text, so an echoing operator does
 * not put them in logs or the database.
 */
export function maskerFor(row: Pick<OperationRow, 'body'>): Masker {
  // One masker per claimed row object: the send, its settle and its logs share it.
  let masker = maskers.get(row);
  if (!masker) {
    masker = personalMasker(personalValuesOf(row.body));
    maskers.set(row, masker);
  }
  return masker;
}

const maskers = new WeakMap<object, Masker>();

/** The error with its message replaced (the same object when nothing changed). */
export function withMessage(error: OperatorError, message: string): OperatorError {
  if (message === error.message) return error;
  return new OperatorError(error.kind, message, error.status, error.retryAfterMs);
}

/** The row's step as stored: texts cut to their excerpt, the response masked. */
function stepOf(row: OperationRow, next: NextStep): SettleStep {
  if (next.state === 'accepted') {
    // Operators echo the body: its personal keys and values are masked before it is stored.
    return { to: 'accepted', response: maskReceived(next.response, maskerFor(row)), status: next.status };
  }
  if (next.state === 'failed')
    return { to: 'failed', error: next.error.slice(0, EXCERPT), status: next.status };
  return {
    to: 'queued',
    nextAttemptAt: isoAt(next.nextAttemptAtMs),
    error: next.error.slice(0, EXCERPT),
    status: next.status,
    refund: next.refund,
  };
}

/**
 * Records the attempt and moves the row to its next step. Synchronous: it runs inside the group
 * commit. An accepted row also applies the operator's decisions that arrived before it.
 */
export function settleAttempt(sqlite: Sqlite, a: SettledAttempt): SettleResult {
  const { row, outcome, next } = a;
  const ref = row.marketplaceTransactionRef;
  const settled = storeAttempt(
    sqlite,
    { id: row.id, ref, owner: a.owner, now: a.nowIso },
    {
      startedAt: isoAt(a.startedMs),
      durationMs: a.durationMs,
      statusCode: outcome.kind === 'answered' ? outcome.status : (outcome.error.status ?? null),
      // The dispatcher masked the message already (before any cut, so no value is left half-masked).
      error: outcome.kind === 'error' ? outcome.error.message.slice(0, EXCERPT) : null,
    },
    stepOf(row, next),
  );
  if (!settled || next.state !== 'accepted') return { settled, effects: [] };
  // Decisions that came before the row was known were stored with their keys masked only: now
  // that the row is accepted its values are masked there too, before a reason is copied over.
  maskEventsOf(sqlite, ref, maskerFor(row));
  return { settled, effects: applyPendingDecisions(sqlite, row.id, ref, a.nowIso) };
}

/** Logs the step an attempt moved its row to. */
export function logStep(log: Logger, row: OperationRow, next: NextStep): void {
  const ref = row.marketplaceTransactionRef;
  const base = { ref, id: row.id, attempts: row.attempts };
  if (next.state === 'accepted') {
    log.info({ event: 'outbox.accepted', ...base, status: next.status }, `${ref} accepted`);
  } else if (next.state === 'failed') {
    log.error(
      { event: 'outbox.failed', ...base, status: next.status, error: next.error },
      `${ref} failed: ${next.error}`,
    );
  } else {
    log.warn(
      {
        event: 'outbox.retry',
        ...base,
        status: next.status,
        error: next.error,
        nextAttemptAt: isoAt(next.nextAttemptAtMs),
      },
      `${ref} will be retried`,
    );
  }
}
