import { isoAt } from '../common/clock.js';
import { SteerError } from '../common/errors.js';
import type { OperationsPageRequest } from '../operations/operationsReads.js';
import type { OperationRow } from '../operations/rows.js';
import { isOperationState, nextState, OPERATION_STATES, type OperationState } from '../operations/states.js';
import type { OutboxAccess } from './access.js';
import { type OutboxEntry, toEntry } from './entry.js';
import type { WakeDispatcher } from './prepareInsert.js';

/**
 * Inspecting and steering the queue, shared by `vcu-sync outbox` and the API.
 * Retry semantics: a `failed` row goes back to `queued` with attempts reset to 0 and its age
 * (max_age_hours) counted from the retry (`retried_at`), so it gets a full new round of attempts;
 * its attempt history stays in outbox_attempts. A `queued` row waiting out a backoff is made due now.
 * Each works on either store (OutboxAccess: SQLite's or PostgreSQL's reads and store).
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

export function parseState(state: string | undefined): OperationState | undefined {
  if (state === undefined || state === '') return undefined;
  if (isOperationState(state)) return state;
  throw new SteerError('invalid', `state must be one of ${OPERATION_STATES.join(', ')}`);
}

/** The page's parameters, checked: a bad state, cursor or limit is a usage error (400, exit 64). */
function pageRequest(options: ListOptions): OperationsPageRequest {
  const state = parseState(options.state);
  const cursor = options.cursor ?? '';
  if (cursor !== '' && !/^\d{1,15}$/.test(cursor))
    throw new SteerError('invalid', 'cursor must be a nextCursor value');
  const limit = options.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
    throw new SteerError('invalid', 'limit must be a whole number from 1 to 1000');
  }
  return { after: Number(cursor || 0), state: state ?? null, limit };
}

export async function listOperations(
  outbox: OutboxAccess,
  options: ListOptions = {},
): Promise<OperationPage> {
  const request = pageRequest(options);
  // One row more than asked tells whether there is a next page.
  const rows = await outbox.reads.page({ ...request, limit: request.limit + 1 });
  const more = rows.length > request.limit;
  const page = more ? rows.slice(0, request.limit) : rows;
  return { items: page.map((r) => toEntry(r)), nextCursor: more ? String(page[page.length - 1]!.id) : null };
}

async function rowOf(outbox: OutboxAccess, ref: string): Promise<OperationRow> {
  const row = await outbox.reads.byRef(ref);
  if (!row) throw new SteerError('not-found', `no operation with marketplaceTransactionRef ${ref}`);
  return row;
}

/** The row with its attempt log. */
export async function showOperation(outbox: OutboxAccess, ref: string): Promise<OutboxEntry> {
  const row = await rowOf(outbox, ref);
  return toEntry(row, await outbox.reads.attemptsOf(row.id));
}

/** A steering request judged against a row: the store's move to make, or nothing to do. */
type Move = (outbox: OutboxAccess, row: OperationRow, now: string) => Promise<boolean>;

/** failed → queued (attempts reset), or queued → due now; a SteerError for any other state. */
function retryMove(row: OperationRow): Move {
  if (nextState(row.state, 'retry').ok)
    return (o, r, now) => o.store.retryFailed({ id: r.id, ref: r.marketplaceTransactionRef }, now);
  if (nextState(row.state, 'expedite').ok) return (o, r, now) => o.store.expedite(r.id, now);
  throw new SteerError(
    'conflict',
    `cannot retry ${row.marketplaceTransactionRef}: it is ${row.state}; only a failed row (or a queued one, to send it now) can be retried`,
  );
}

/** → cancelled when the transition table allows it (null: cancelled already); a SteerError otherwise. */
function cancelMove(row: OperationRow, now: string): Move | null {
  const ref = row.marketplaceTransactionRef;
  if (row.state === 'cancelled') return null;
  const leaseExpired = row.lease_until !== null && row.lease_until < now;
  if (nextState(row.state, 'cancel', { leaseExpired }).ok)
    return (o, r, at) => o.store.cancel({ id: r.id, ref, from: r.state }, at);
  if (row.state === 'sending') {
    throw new SteerError(
      'conflict',
      `cannot cancel ${ref}: it is being sent right now (lease until ${row.lease_until}) and the operator may accept it; ` +
        'look again once the attempt settles',
    );
  }
  throw new SteerError(
    'conflict',
    `cannot cancel ${ref}: it is ${row.state}; the operator has already accepted it, so only a new reversing operation can undo it`,
  );
}

/**
 * Reads the row, judges the request by the transition table and makes the store's guarded move.
 * A move refused by its guard means another writer (the dispatcher, a replica) moved the row
 * between the read and the write: the row is read and judged again, so the answer always speaks
 * of a state the row was really in.
 */
async function steer(
  outbox: OutboxAccess,
  ref: string,
  judge: (row: OperationRow, now: string) => Move | null,
): Promise<OutboxEntry> {
  for (let tries = 0; tries < STEER_TRIES; tries++) {
    const now = isoAt(outbox.clock.now());
    const current = await rowOf(outbox, ref);
    const move = judge(current, now);
    if (!move) return toEntry(current);
    if (await move(outbox, current, now)) return toEntry(await rowOf(outbox, ref));
  }
  throw new SteerError('conflict', `${ref} keeps changing under this request; try again`);
}

/** How often a steering request is judged again when others keep moving its row (a bound, not a wait). */
const STEER_TRIES = 5;

/** failed → queued (attempts reset), or queued → due now; calls `wake` when it did. */
export async function retryOperation(
  outbox: OutboxAccess,
  ref: string,
  wake?: WakeDispatcher,
): Promise<OutboxEntry> {
  const entry = await steer(outbox, ref, retryMove);
  wake?.();
  return entry;
}

/** queued or failed (or sending with a dead lease) → cancelled; cancelled again is a no-op. */
export function cancelOperation(outbox: OutboxAccess, ref: string): Promise<OutboxEntry> {
  return steer(outbox, ref, cancelMove);
}
