import { randomUUID } from 'node:crypto';
import type { Statement } from 'better-sqlite3';
import type { Sqlite } from '../db/open.js';
import { perHandle } from '../db/perHandle.js';
import { personalMasker, personalValuesOf } from '../operations/personal.js';
import type { OperationState } from '../operations/states.js';
import { deliveryBody } from './body.js';
import { eventFor, subscribersOf } from './subscribers.js';

/**
 * Writes the deliveries a state change owes the subscribers, in the transaction that makes the
 * change (called from the one place every change passes, operations/store.ts): a decision is
 * pushed if and only if it commits. Synchronous.
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

interface OperationFacts {
  operationType: string;
  body: string;
  decision_reason: string | null;
  last_error: string | null;
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

/** Queues one delivery per subscriber whose `events` match, for each change that raises an event. */
export function enqueueDeliveries(sqlite: Sqlite, changes: readonly Transition[]): number {
  const subscribers = subscribersOf(sqlite);
  if (subscribers.length === 0) return 0;
  const st = statements(sqlite);
  let queued = 0;
  for (const change of changes) {
    if (change.from === change.to) continue;
    const type = eventFor(change.to);
    if (!type) continue;
    const wanting = subscribers.filter((s) => s.events.includes(type));
    if (wanting.length === 0) continue;
    const facts = st.facts.get(change.ref);
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
    for (const sub of wanting) {
      st.insert.run({
        subscriber: sub.key,
        type,
        ref: change.ref,
        webhookId: `msg_${randomUUID().replaceAll('-', '')}`,
        body,
        at: change.at,
      });
      queued += 1;
    }
  }
  if (queued > 0) notifyEnqueued(sqlite);
  return queued;
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
