import { createHash } from 'node:crypto';
import { isoAt } from '../clock.js';
import type { AppContext } from '../context.js';
import type { OperationsReads } from '../operations/reads.js';
import type { OperationRow } from '../operations/rows.js';
import type { NewOperation, OperationsStore } from '../operations/storeSeam.js';
import type { TransactionOptions } from '../store/script.js';
import { wireSpelling } from './operationTypes.js';
import { type FieldError, validateNotification } from './validate.js';

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

/**
 * Validation, hash and wire body: all the work that needs no database, done outside any
 * transaction (and the same whichever store the row goes to): the row to INSERT.
 */
export function prepareInsert(
  ctx: Pick<AppContext, 'config'>,
  input: unknown,
): NewOperation | { status: 422; errors: FieldError[] } {
  const validation = validateNotification(input, { marketplaceId: ctx.config.operator.marketplace_id });
  if (!validation.ok) return { status: 422, errors: validation.errors };
  const { kind, ref, notification, orderKey } = validation.operation;
  const hash = notificationHash(notification);
  const wire = wireSpelling(kind, ctx.config);
  const body = JSON.stringify({ ...notification, operationType: wire });
  return { ref, operationType: wire, orderKey, body, hash };
}

/** The answer when the INSERT found `ref` queued already: 200 the same body, 409 another one. */
export function answerExisting(prepared: NewOperation, existing: OperationRow | undefined): EnqueueResult {
  const { ref, hash } = prepared;
  if (!existing) throw new Error(`outbox row ${ref} vanished between insert and read`);
  if (existing.body_hash === hash) return { status: 200, row: existing };
  return {
    status: 409,
    row: existing,
    message: `marketplaceTransactionRef ${ref} is already queued with a different body; use a new ref for a new operation`,
  };
}

/** How a store queues: its transaction's wait, and when the dispatcher is woken. */
export interface EnqueueOptions {
  /** How long the INSERT may wait for another process's lock before it is refused (TransactionOptions). */
  busyGraceMs?: number;
  /**
   * Wake the dispatcher as the INSERT is submitted, before its commit: where the commits of one turn
   * are grouped (SQLite's group commit), the claim it makes joins the same commit, after the INSERT
   * (one fsync for both; on a 200/409 the claim merely finds nothing new). Else on a 201, once
   * committed, so the claim finds the row.
   */
  wakeBeforeCommit: boolean;
}

/**
 * Validates and queues one notification: the INSERT ... ON CONFLICT DO NOTHING is one
 * `store.insert` (its own transaction, with its feed row and deliveries; a 201 means it committed),
 * and a ref found queued already is read back to answer 200 (the same body again, nothing changes)
 * or 409 (another body); 422 with every field error. Exactly once per ref: the ON CONFLICT waits
 * for a concurrent insert of the ref to commit, so the read finds it.
 */
export async function enqueueThrough(
  ctx: Pick<AppContext, 'clock' | 'config'>,
  seams: { store: OperationsStore; reads: OperationsReads },
  input: unknown,
  options: EnqueueOptions,
  wake?: WakeDispatcher,
): Promise<EnqueueResult> {
  const prepared = prepareInsert(ctx, input);
  if ('errors' in prepared) return prepared;
  const transaction: TransactionOptions = { busyGraceMs: options.busyGraceMs };
  const inserting = seams.store.insert([prepared], isoAt(ctx.clock.now()), transaction);
  if (options.wakeBeforeCommit) wake?.();
  const [inserted] = await inserting;
  if (inserted) {
    if (!options.wakeBeforeCommit) wake?.();
    return { status: 201, row: inserted };
  }
  return answerExisting(prepared, await seams.reads.byRef(prepared.ref));
}
