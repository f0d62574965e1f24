import { isoAt } from '../clock.js';
import type { AppContext } from '../context.js';
import { UserError } from '../errors.js';
import { attemptsOf, operationByRef, operationsPage } from '../operations/reads.js';
import type { OperationRow } from '../operations/rows.js';
import { isOperationState, nextState, OPERATION_STATES, type OperationState } from '../operations/states.js';
import { cancelOperation as cancelRow, expedite, retryFailed } from '../operations/store.js';
import type { WakeDispatcher } from './enqueue.js';
import { type OutboxEntry, toEntry } from './entry.js';

/** What inspecting and steering need: the database and the time. */
export type ManageContext = Pick<AppContext, 'database' | 'clock'>;

/**
 * Inspecting and steering the queue, shared by `vcu-sync outbox` and the API.
 * Retry semantics: a `failed` row goes back to `queued` with attempts reset to 0 and its age
 * (max_age_hours) counted from the retry (`retried_at`), so it gets a full new round of attempts;
 * its attempt history stays in outbox_attempts. A `queued` row waiting out a backoff is made due now.
 * Cancel: only before the operator accepted it; a row `sending` under a live lease cannot be
 * cancelled (the POST is on the wire and may be accepted), and a `failed` row may be closed as cancelled.
 */

/** Options of {@link listOperations}. */
export interface ListOptions {
  /** Only rows in this state (default: all). */
  state?: string | undefined;
  /** The `nextCursor` of the previous page (default: from the start). */
  cursor?: string | undefined;
  /** Rows per page, 1 to 1000 (default: 100). */
  limit?: number | undefined;
}

/** One page of the queue, oldest first. */
export interface OperationPage {
  items: OutboxEntry[];
  /** Pass as `cursor` for the next page; null on the last one. */
  nextCursor: string | null;
}

/** A refused steering request: `not-found` (404) or `conflict` (409), with a sentence saying why. */
export class SteerError extends UserError {
  constructor(
    readonly code: 'not-found' | 'conflict' | 'invalid',
    message: string,
  ) {
    super(message, code === 'not-found' ? 3 : 1);
    this.name = 'SteerError';
  }
}

export function parseState(state: string | undefined): OperationState | undefined {
  if (state === undefined || state === '') return undefined;
  if (isOperationState(state)) return state;
  throw new SteerError('invalid', `state must be one of ${OPERATION_STATES.join(', ')}`);
}

export function listOperations(ctx: ManageContext, options: ListOptions = {}): OperationPage {
  const state = parseState(options.state);
  const cursor = options.cursor ?? '';
  if (cursor !== '' && !/^\d{1,15}$/.test(cursor))
    throw new SteerError('invalid', 'cursor must be a nextCursor value');
  const limit = options.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
    throw new SteerError('invalid', 'limit must be a whole number from 1 to 1000');
  }
  const rows = operationsPage(ctx.database.sqlite, {
    after: Number(cursor || 0),
    state: state ?? null,
    limit: limit + 1,
  });
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  return { items: page.map((r) => toEntry(r)), nextCursor: more ? String(page[page.length - 1]!.id) : null };
}

function rowOf(ctx: ManageContext, ref: string): OperationRow {
  const row = operationByRef(ctx.database.sqlite, ref);
  if (!row) throw new SteerError('not-found', `no operation with marketplaceTransactionRef ${ref}`);
  return row;
}

/** The row with its attempt log. */
export function showOperation(ctx: ManageContext, ref: string): OutboxEntry {
  const row = rowOf(ctx, ref);
  return toEntry(row, attemptsOf(ctx.database.sqlite, row.id));
}

/**
 * failed → queued (attempts reset), or queued → due now; calls `wake` when it did. The row is read,
 * judged by the transition table and written in one transaction.
 */
export function retryOperation(ctx: ManageContext, ref: string, wake?: WakeDispatcher): OutboxEntry {
  const { sqlite } = ctx.database;
  const now = isoAt(ctx.clock.now());
  const row = sqlite
    .transaction(() => {
      const current = rowOf(ctx, ref);
      const id = { id: current.id, ref };
      const done = nextState(current.state, 'retry').ok
        ? retryFailed(sqlite, id, now)
        : nextState(current.state, 'expedite').ok && expedite(sqlite, current.id, now);
      if (!done) {
        throw new SteerError(
          'conflict',
          `cannot retry ${ref}: it is ${current.state}; only a failed row (or a queued one, to send it now) can be retried`,
        );
      }
      return rowOf(ctx, ref);
    })
    .immediate();
  wake?.();
  return toEntry(row);
}

/**
 * queued or failed (or sending with a dead lease) → cancelled; cancelled again is a no-op. The row
 * is read, judged by the transition table and written in one transaction.
 */
export function cancelOperation(ctx: ManageContext, ref: string): OutboxEntry {
  const { sqlite } = ctx.database;
  const now = isoAt(ctx.clock.now());
  const row = sqlite
    .transaction(() => {
      const current = rowOf(ctx, ref);
      if (current.state === 'cancelled') return current;
      const leaseExpired = current.lease_until !== null && current.lease_until < now;
      const verdict = nextState(current.state, 'cancel', { leaseExpired });
      if (verdict.ok && cancelRow(sqlite, { id: current.id, ref, from: current.state }, now))
        return rowOf(ctx, ref);
      if (current.state === 'sending') {
        throw new SteerError(
          'conflict',
          `cannot cancel ${ref}: it is being sent right now (lease until ${current.lease_until}) and the operator may accept it; ` +
            'look again once the attempt settles',
        );
      }
      throw new SteerError(
        'conflict',
        `cannot cancel ${ref}: it is ${current.state}; the operator has already accepted it, so only a new reversing operation can undo it`,
      );
    })
    .immediate();
  return toEntry(row);
}
