import { isoAt } from '../clock.js';
import type { AppContext } from '../context.js';
import { UserError } from '../errors.js';
import { type OutboxEntry, toEntry } from './entry.js';
import { OUTBOX_STATES, type OutboxRow, type OutboxState, outboxQueries } from './queries.js';

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

export function parseState(state: string | undefined): OutboxState | undefined {
  if (state === undefined || state === '') return undefined;
  if ((OUTBOX_STATES as readonly string[]).includes(state)) return state as OutboxState;
  throw new SteerError('invalid', `state must be one of ${OUTBOX_STATES.join(', ')}`);
}

export function listOperations(ctx: AppContext, options: ListOptions = {}): OperationPage {
  const state = parseState(options.state);
  const cursor = options.cursor ?? '';
  if (cursor !== '' && !/^\d{1,15}$/.test(cursor))
    throw new SteerError('invalid', 'cursor must be a nextCursor value');
  const limit = options.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
    throw new SteerError('invalid', 'limit must be a whole number from 1 to 1000');
  }
  const rows = outboxQueries(ctx.database.sqlite).list.all({
    after: Number(cursor || 0),
    state: state ?? null,
    limit: limit + 1,
  });
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  return { items: page.map((r) => toEntry(r)), nextCursor: more ? String(page[page.length - 1]!.id) : null };
}

function rowOf(ctx: AppContext, ref: string): OutboxRow {
  const row = outboxQueries(ctx.database.sqlite).byRef.get(ref);
  if (!row) throw new SteerError('not-found', `no operation with marketplaceTransactionRef ${ref}`);
  return row;
}

/** The row with its attempt log. */
export function showOperation(ctx: AppContext, ref: string): OutboxEntry {
  const row = rowOf(ctx, ref);
  return toEntry(row, outboxQueries(ctx.database.sqlite).attemptsOf.all(row.id));
}

/** failed → queued (attempts reset), or queued → due now. */
export function retryOperation(ctx: AppContext, ref: string): OutboxEntry {
  const q = outboxQueries(ctx.database.sqlite);
  const row = rowOf(ctx, ref);
  const now = isoAt(ctx.clock.now());
  const changed =
    row.state === 'failed'
      ? q.retry.run({ id: row.id, now }).changes
      : row.state === 'queued'
        ? q.expedite.run({ id: row.id, now }).changes
        : 0;
  if (changed === 0) {
    const current = rowOf(ctx, ref);
    throw new SteerError(
      'conflict',
      `cannot retry ${ref}: it is ${current.state}; only a failed row (or a queued one, to send it now) can be retried`,
    );
  }
  ctx.hooks.wakeDispatcher?.();
  return toEntry(rowOf(ctx, ref));
}

/** queued or failed (or sending with a dead lease) → cancelled; cancelled again is a no-op. */
export function cancelOperation(ctx: AppContext, ref: string): OutboxEntry {
  const q = outboxQueries(ctx.database.sqlite);
  const row = rowOf(ctx, ref);
  if (row.state === 'cancelled') return toEntry(row);
  const now = isoAt(ctx.clock.now());
  if (q.cancel.run({ id: row.id, now }).changes > 0) return toEntry(rowOf(ctx, ref));
  const current = rowOf(ctx, ref);
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
}
