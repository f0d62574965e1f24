import { createHash } from 'node:crypto';
import { isoAt } from '../clock.js';
import type { AppContext } from '../context.js';
import { commitQueueFor, REQUEST_BUSY_GRACE_MS } from '../db/commitQueue.js';
import { wireSpelling } from './operationTypes.js';
import { type OutboxQueries, type OutboxRow, outboxQueries } from './queries.js';
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

/** A validated notification, ready for its INSERT. */
interface PreparedInsert {
  ref: string;
  hash: string;
  params: { ref: string; operationType: string; orderKey: string | null; body: string; hash: string };
}

/** Validation, hash and wire body: all the work that needs no database, done outside any transaction. */
function prepare(ctx: AppContext, input: unknown): PreparedInsert | { status: 422; errors: FieldError[] } {
  const validation = validateNotification(input, { marketplaceId: ctx.config.operator.marketplace_id });
  if (!validation.ok) return { status: 422, errors: validation.errors };
  const { kind, ref, notification, orderKey } = validation.operation;
  const hash = notificationHash(notification);
  const wire = wireSpelling(kind, ctx.config);
  const body = JSON.stringify({ ...notification, operationType: wire });
  return { ref, hash, params: { ref, operationType: wire, orderKey, body, hash } };
}

/** The INSERT ... ON CONFLICT DO NOTHING and, on conflict, the stored row (synchronous: no awaits). */
function store(ctx: AppContext, q: OutboxQueries, prepared: PreparedInsert): EnqueueResult {
  const inserted = q.insert.get({ ...prepared.params, now: isoAt(ctx.clock.now()) });
  if (inserted) return { status: 201, row: inserted };
  const { ref, hash } = prepared;
  const existing = q.byRef.get(ref);
  if (!existing) throw new Error(`outbox row ${ref} vanished between insert and read`);
  if (existing.body_hash === hash) return { status: 200, row: existing };
  return {
    status: 409,
    row: existing,
    message: `marketplaceTransactionRef ${ref} is already queued with a different body; use a new ref for a new operation`,
  };
}

/**
 * Validates and queues one notification: one INSERT ... ON CONFLICT DO NOTHING in its own commit.
 * 201 new, 200 the same ref with the same body again (nothing changes), 409 the same ref with
 * another body, 422 with every field error. Wakes the dispatcher on 201.
 */
export function enqueueOperation(ctx: AppContext, input: unknown): EnqueueResult {
  const prepared = prepare(ctx, input);
  if ('errors' in prepared) return prepared;
  const result = store(ctx, outboxQueries(ctx.database.sqlite), prepared);
  if (result.status === 201) ctx.hooks.wakeDispatcher?.();
  return result;
}

/**
 * {@link enqueueOperation} for a server answering many requests at once: the INSERT joins the
 * connection's group commit (one fsync for every write of the same event-loop turn) and the promise
 * resolves only after that commit, so a 201 still means the row is on disk. Same answers, same
 * exactly-once per ref (the inserts of one group run one after another in their own savepoints).
 */
export async function enqueueOperationGrouped(ctx: AppContext, input: unknown): Promise<EnqueueResult> {
  const prepared = prepare(ctx, input);
  if ('errors' in prepared) return prepared;
  const q = outboxQueries(ctx.database.sqlite);
  // A request waits a moment for another process's lock, then is refused (503 + Retry-After).
  const stored = commitQueueFor(ctx.database.sqlite).submit(() => store(ctx, q, prepared), {
    busyGraceMs: REQUEST_BUSY_GRACE_MS,
  });
  // Woken before the commit, the dispatcher's claim joins the same group, after this INSERT: one
  // fsync for both. On a 200/409 the claim merely finds nothing new.
  ctx.hooks.wakeDispatcher?.();
  return await stored;
}
