import { createHash } from 'node:crypto';
import type { AppContext } from '../context.js';
import type { OperationRow } from '../operations/rows.js';
import type { NewOperation } from '../operations/storeSeam.js';
import { ledgerEntryOfNotification } from './ledgerEntry.js';
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
  const sent = { ...notification, operationType: wire };
  // The ledger's entry from the object the body is the JSON of: the reconciler need not parse it again.
  return {
    ref,
    operationType: wire,
    orderKey,
    body: JSON.stringify(sent),
    hash,
    ledger: ledgerEntryOfNotification(sent),
  };
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
