import { createHash } from 'node:crypto';
import { isoAt } from '../clock.js';
import type { AppContext } from '../context.js';
import { operationByRef } from '../operations/reads.js';
import type { OperationsReads } from '../operations/readsSeam.js';
import type { OperationRow } from '../operations/rows.js';
import { insertOperation } from '../operations/store.js';
import type { NewOperation, OperationsStore } from '../operations/storeSeam.js';
import { commitQueueFor } from '../sqlite/commitQueue.js';
import { REQUEST_BUSY_GRACE_MS } from '../store/script.js';
import { wireSpelling } from './operationTypes.js';
import { type FieldError, validateNotification } from './validate.js';

/** What enqueueing needs: the database, the time, and the configuration (marketplace id, wire spelling). */
export type EnqueueContext = Pick<AppContext, 'database' | 'clock' | 'config'>;

/** Called once a new row may be due, so a running dispatcher need not wait for its poll. */
export type WakeDispatcher = () => void;

/** The answer to an enqueue, as the API maps it to HTTP. */
export type EnqueueResult =
  | { status: 201; row: OperationRow }
  | { status: 200; row: OperationRow }
  | { status: 409; row: OperationRow; message: string }
  | { status: 422; errors: FieldError[] };

/** JSON with object keys sorted, so the same content always hashes the same. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * Hash of the validated input. Taken before the wire spelling is applied and over normalized values,
 * so `retire` vs `Retire`, key order or a timestamp offset do not make the same operation a
 * "different body"; and kept when personal fields are scrubbed, so a late repeat still answers 200.
 */
export function notificationHash(notification: Record<string, unknown>): string {
  return createHash('sha256').update(canonicalJson(notification)).digest('hex');
}

/** A validated notification, ready for its INSERT. */
export interface PreparedInsert {
  ref: string;
  hash: string;
  params: NewOperation;
}

/**
 * Validation, hash and wire body: all the work that needs no database, done outside any
 * transaction (and the same whichever store the row goes to).
 */
export function prepareInsert(
  ctx: Pick<AppContext, 'config'>,
  input: unknown,
): PreparedInsert | { status: 422; errors: FieldError[] } {
  const validation = validateNotification(input, { marketplaceId: ctx.config.operator.marketplace_id });
  if (!validation.ok) return { status: 422, errors: validation.errors };
  const { kind, ref, notification, orderKey } = validation.operation;
  const hash = notificationHash(notification);
  const wire = wireSpelling(kind, ctx.config);
  const body = JSON.stringify({ ...notification, operationType: wire });
  return { ref, hash, params: { ref, operationType: wire, orderKey, body, hash } };
}

/** The answer when the INSERT found `ref` queued already: 200 the same body, 409 another one. */
function answerExisting(prepared: PreparedInsert, existing: OperationRow | undefined): EnqueueResult {
  const { ref, hash } = prepared;
  if (!existing) throw new Error(`outbox row ${ref} vanished between insert and read`);
  if (existing.body_hash === hash) return { status: 200, row: existing };
  return {
    status: 409,
    row: existing,
    message: `marketplaceTransactionRef ${ref} is already queued with a different body; use a new ref for a new operation`,
  };
}

/** The INSERT ... ON CONFLICT DO NOTHING and, on conflict, the stored row (synchronous: no awaits). */
function store(ctx: EnqueueContext, prepared: PreparedInsert): EnqueueResult {
  const { sqlite } = ctx.database;
  const inserted = insertOperation(sqlite, prepared.params, isoAt(ctx.clock.now()));
  if (inserted) return { status: 201, row: inserted };
  return answerExisting(prepared, operationByRef(sqlite, prepared.ref));
}

/**
 * Validates and queues one notification: one INSERT ... ON CONFLICT DO NOTHING in its own commit.
 * 201 new, 200 the same ref with the same body again (nothing changes), 409 the same ref with
 * another body, 422 with every field error. Calls `wake` on 201.
 */
export function enqueueOperation(ctx: EnqueueContext, input: unknown, wake?: WakeDispatcher): EnqueueResult {
  const prepared = prepareInsert(ctx, input);
  if ('errors' in prepared) return prepared;
  const result = store(ctx, prepared);
  if (result.status === 201) wake?.();
  return result;
}

/**
 * {@link enqueueOperation} for a server answering many requests at once: the INSERT joins the
 * connection's group commit (one fsync for every write of the same event-loop turn) and the promise
 * resolves only after that commit, so a 201 still means the row is on disk. Same answers, same
 * exactly-once per ref (the inserts of one group run one after another in their own savepoints).
 */
export async function enqueueOperationGrouped(
  ctx: EnqueueContext,
  input: unknown,
  wake?: WakeDispatcher,
): Promise<EnqueueResult> {
  const prepared = prepareInsert(ctx, input);
  if ('errors' in prepared) return prepared;
  // A request waits a moment for another process's lock, then is refused (503 + Retry-After).
  const stored = commitQueueFor(ctx.database.sqlite).submit(() => store(ctx, prepared), {
    busyGraceMs: REQUEST_BUSY_GRACE_MS,
  });
  // Woken before the commit, the dispatcher's claim joins the same group, after this INSERT: one
  // fsync for both. On a 200/409 the claim merely finds nothing new.
  wake?.();
  return await stored;
}

/**
 * {@link enqueueOperation} through the store seams (PostgreSQL's; any store): the INSERT is one
 * `store.insert` (its own transaction, with its feed row and deliveries), and a ref found queued
 * already is read back to answer 200 or 409. Same answers; exactly once per ref (the INSERT's
 * ON CONFLICT DO NOTHING waits for a concurrent insert of the ref to commit, so the read finds it).
 */
export async function enqueueThrough(
  ctx: Pick<AppContext, 'clock' | 'config'>,
  seams: { store: OperationsStore; reads: OperationsReads },
  input: unknown,
  wake?: WakeDispatcher,
): Promise<EnqueueResult> {
  const prepared = prepareInsert(ctx, input);
  if ('errors' in prepared) return prepared;
  const [inserted] = await seams.store.insert([prepared.params], isoAt(ctx.clock.now()));
  if (inserted) {
    wake?.();
    return { status: 201, row: inserted };
  }
  return answerExisting(prepared, await seams.reads.byRef(prepared.ref));
}
