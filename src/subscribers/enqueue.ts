import { randomUUID } from 'node:crypto';
import type { Statement } from 'better-sqlite3';
import type { Sqlite } from '../db/open.js';
import { perHandle } from '../db/perHandle.js';
import type { SqliteStateChangeSink } from '../operations/effects.js';
import { personalMasker, personalValuesOf } from '../operations/personal.js';
import type { OperationState } from '../operations/states.js';
import { deliveryBody } from './body.js';
import { eventFor, type Subscriber } from './events.js';

/**
 * Writes the deliveries a state change owes the subscribers, in the transaction that makes the
 * change: the sink (operations/effects.ts) the one place every change passes (operations/store.ts)
 * calls, so a decision is pushed if and only if it commits. Synchronous.
 */

/** A state change as the store reports it. */
export interface Transition {
  ref: string;
  from: OperationState | null;
  to: OperationState;
  at: string;
}

/** Longest reason sent; the rest is cut (an operator's error page is no use to a subscriber). */
const MAX_REASON_CHARS = 500;

/** What a delivery body needs from the operation row (one SELECT per ref on SQLite, one per batch on PostgreSQL). */
export interface OperationFacts {
  operationType: string;
  body: string;
  decision_reason: string | null;
  last_error: string | null;
}

/** One delivery row to insert (both dialects). */
export interface DeliveryRow {
  subscriber: string;
  type: string;
  ref: string;
  webhookId: string;
  body: string;
  at: string;
}

const statements = perHandle((sqlite: Sqlite) => ({
  facts: sqlite.prepare(
    'SELECT operationType, body, decision_reason, last_error FROM outbox WHERE marketplaceTransactionRef = ?',
  ) as Statement<[string], OperationFacts>,
  insert: sqlite.prepare(`
    INSERT INTO deliveries (subscriber, event_type, ref, webhook_id, body, state, attempts, next_attempt_at,
                            created_at, updated_at)
    VALUES (@subscriber, @type, @ref, @webhookId, @body, 'pending', 0, @at, @at, @at)`),
}));

/** The reason a subscriber is told: the decision's or the failure's, masked of the operation's personal values. */
function reasonOf(to: OperationState, facts: OperationFacts): string | null {
  const raw = to === 'rejected' ? facts.decision_reason : to === 'failed' ? facts.last_error : null;
  if (!raw) return null;
  const masked = personalMasker(personalValuesOf(facts.body))(raw);
  return masked.length > MAX_REASON_CHARS ? `${masked.slice(0, MAX_REASON_CHARS)}…` : masked;
}

/** The changes that raise an event some subscriber wants (pure): whose facts the caller must read. */
export function changesOwingDeliveries(
  subscribers: readonly Subscriber[],
  changes: readonly Transition[],
): Transition[] {
  return changes.filter((change) => {
    if (change.from === change.to) return false;
    const type = eventFor(change.to);
    return type !== undefined && subscribers.some((s) => s.events.includes(type));
  });
}

/**
 * The deliveries owed for these changes (pure but for the random webhook id): one per subscriber
 * whose `events` match, for each change that raises an event and whose row's facts are known.
 */
export function deliveryRows(
  subscribers: readonly Subscriber[],
  changes: readonly Transition[],
  factsOf: (ref: string) => OperationFacts | undefined,
): DeliveryRow[] {
  const rows: DeliveryRow[] = [];
  for (const change of changesOwingDeliveries(subscribers, changes)) {
    const type = eventFor(change.to);
    if (!type) continue;
    const facts = factsOf(change.ref);
    if (!facts) continue;
    const body = deliveryBody(
      type,
      {
        ref: change.ref,
        operationType: facts.operationType,
        state: change.to,
        reason: reasonOf(change.to, facts),
        at: change.at,
      },
      change.at,
    );
    for (const sub of subscribers) {
      if (!sub.events.includes(type)) continue;
      rows.push({
        subscriber: sub.key,
        type,
        ref: change.ref,
        webhookId: `msg_${randomUUID().replaceAll('-', '')}`,
        body,
        at: change.at,
      });
    }
  }
  return rows;
}

/** The SQLite sink that queues these subscribers' deliveries; none when nobody subscribes. */
export function deliveriesSink(subscribers: readonly Subscriber[]): SqliteStateChangeSink | undefined {
  if (subscribers.length === 0) return undefined;
  return (sqlite, changes) => {
    enqueueDeliveries(sqlite, subscribers, changes);
  };
}

/** Queues one delivery per subscriber whose `events` match, for each change that raises an event. */
export function enqueueDeliveries(
  sqlite: Sqlite,
  subscribers: readonly Subscriber[],
  changes: readonly Transition[],
): number {
  if (subscribers.length === 0) return 0;
  const st = statements(sqlite);
  const rows = deliveryRows(subscribers, changes, (ref) => st.facts.get(ref));
  for (const row of rows) st.insert.run(row);
  if (rows.length > 0) notifyEnqueued(sqlite);
  return rows.length;
}

const listeners = new WeakMap<Sqlite, () => void>();

/** What the dispatcher running on this handle calls to look for work (it claims after the commit). */
export function onDeliveriesEnqueued(sqlite: Sqlite, listener: (() => void) | undefined): void {
  if (listener) listeners.set(sqlite, listener);
  else listeners.delete(sqlite);
}

function notifyEnqueued(sqlite: Sqlite): void {
  const listener = listeners.get(sqlite);
  // After the transaction: the dispatcher's claim goes through the same commit queue, behind it.
  if (listener) queueMicrotask(listener);
}
