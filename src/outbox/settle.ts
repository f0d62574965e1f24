import { type Clock, cancellableSleep, isoAt } from '../common/clock.js';
import { errorMessage } from '../common/errors.js';
import { FailureStreak } from '../common/failureStreak.js';
import type { Logger } from '../common/log.js';
import type { AppContext } from '../context.js';
import { type Masker, maskReceived, personalMasker, personalValuesOf } from '../operations/personal.js';
import type { OperationRow } from '../operations/rows.js';
import type { AttemptRecord, Claim, OperationsStore, SettleStep } from '../operations/storeSeam.js';
import { OperatorError } from '../operator/operatorErrors.js';
import { type AttemptOutcome, decideAttempt, type NextStep, type RetryPolicy } from './nextStep.js';

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
 * An attempt's settle, decided (pure): the outcome with the row's personal values masked out of
 * its error (before any cut, so no value is left half-masked), the row's next step, and the store's
 * call that records both.
 */
export function planSettle(
  attempt: Omit<SettledAttempt, 'next'>,
  policy: RetryPolicy,
  now: number,
  random: () => number,
): { outcome: AttemptOutcome; next: NextStep; request: ReturnType<typeof settleRequest> } {
  const { row } = attempt;
  let { outcome } = attempt;
  if (outcome.kind === 'error')
    outcome = { kind: 'error', error: withMessage(outcome.error, maskerFor(row)(outcome.error.message)) };
  const ageFromMs = Date.parse(row.retried_at ?? row.created_at);
  const next = decideAttempt(outcome, { attempts: row.attempts, ageFromMs }, policy, now, random);
  return { outcome, next, request: settleRequest({ ...attempt, outcome, next }) };
}

/** The store's settle call for an attempt (see OperationsStore.settle): pure, dialect-neutral. */
export function settleRequest(a: SettledAttempt): { claim: Claim; attempt: AttemptRecord; step: SettleStep } {
  const { row, outcome, next } = a;
  return {
    claim: { id: row.id, ref: row.marketplaceTransactionRef, owner: a.owner, now: a.nowIso },
    attempt: {
      startedAt: isoAt(a.startedMs),
      durationMs: a.durationMs,
      statusCode: outcome.kind === 'answered' ? outcome.status : (outcome.error.status ?? null),
      // The dispatcher masked the message already (before any cut, so no value is left half-masked).
      error: outcome.kind === 'error' ? outcome.error.message.slice(0, EXCERPT) : null,
    },
    step: stepOf(row, next),
  };
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

/**
 * The row's settle, tried again with backoff while the store fails (PostgreSQL away for a moment),
 * for as long as this dispatcher's lease on the row lasts: the operator has answered, and a settle
 * given up would send the row again once its lease ran out. Each try is guarded by the lease
 * owner, so a settle that did commit before its answer was lost, or a row another replica took
 * back meanwhile, is left as it is. The first try starts in the caller's turn (SQLite's group commit).
 */
export function settleDurably(
  d: {
    store: OperationsStore;
    clock: Clock;
    random: () => number;
    ctx: Pick<AppContext, 'config' | 'log'>;
    cancel: AbortSignal;
    /** Aborts when the store works again: a settle waiting on its backoff tries at once (default: none). */
    retryNow?: () => AbortSignal;
  },
  row: OperationRow,
  request: ReturnType<typeof settleRequest>,
  /** Called once, when the first try failed and the settle goes on trying (it is owed). */
  onOwed?: () => void,
): Promise<boolean> {
  const leaseEnd =
    Date.parse(row.lease_until ?? '') || d.clock.now() + d.ctx.config.outbox.lease_seconds * 1000;
  const retries = new FailureStreak(d.ctx.config.outbox.poll_ms, d.random);
  const attempt = async (): Promise<boolean> => {
    for (;;) {
      try {
        return await d.store.settle(request.claim, request.attempt, request.step);
      } catch (err) {
        const step = retries.failed();
        if (d.cancel.aborted || d.clock.now() + step.delayMs >= leaseEnd) throw err;
        if (step.first) onOwed?.();
        if (step.first)
          d.ctx.log.warn(
            { event: 'outbox.settle.retrying', ref: row.marketplaceTransactionRef, id: row.id, err },
            `could not record the attempt yet (${errorMessage(err)}); trying again while the lease lasts`,
          );
        await cancellableSleep(step.delayMs, d.cancel, d.retryNow?.());
      }
    }
  };
  return attempt();
}
