import { createHash } from 'node:crypto';
import { isoAt } from '../clock.js';
import type { AppContext } from '../context.js';
import { wireSpelling } from './operationTypes.js';
import { type OutboxRow, outboxQueries } from './queries.js';
import { type FieldError, validateNotification } from './validate.js';

/** The answer to an enqueue, as the API maps it to HTTP. */
export type EnqueueResult =
  | { status: 201; row: OutboxRow }
  | { status: 200; row: OutboxRow }
  | { status: 409; row: OutboxRow; message: string }
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
 * Validates and queues one notification: one INSERT ... ON CONFLICT DO NOTHING. 201 new, 200 the
 * same ref with the same body again (nothing changes), 409 the same ref with another body, 422
 * with every field error. Wakes the dispatcher on 201.
 */
export function enqueueOperation(ctx: AppContext, input: unknown): EnqueueResult {
  const validation = validateNotification(input, { marketplaceId: ctx.config.operator.marketplace_id });
  if (!validation.ok) return { status: 422, errors: validation.errors };
  const { kind, ref, notification, orderKey } = validation.operation;
  const hash = notificationHash(notification);
  const wire = wireSpelling(kind, ctx.config);
  const body = JSON.stringify({ ...notification, operationType: wire });
  const q = outboxQueries(ctx.database.sqlite);
  const inserted = q.insert.get({
    ref,
    operationType: wire,
    orderKey,
    body,
    hash,
    now: isoAt(ctx.clock.now()),
  });
  if (inserted) {
    ctx.hooks.wakeDispatcher?.();
    return { status: 201, row: inserted };
  }
  const existing = q.byRef.get(ref);
  if (!existing) throw new Error(`outbox row ${ref} vanished between insert and read`);
  if (existing.body_hash === hash) return { status: 200, row: existing };
  return {
    status: 409,
    row: existing,
    message: `marketplaceTransactionRef ${ref} is already queued with a different body; use a new ref for a new operation`,
  };
}
