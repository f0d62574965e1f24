import { randomUUID } from 'node:crypto';
import type { SchemaChangeSink } from '../mirror/shape/tracker.js';
import type { StateChange, StateChangeSink } from '../operations/effects.js';
import { personalMasker, personalValuesOf } from '../operations/personal.js';
import type { OperationState } from '../operations/states.js';
import type { FindingNotice, FindingSink } from '../reconcile/pass.js';
import { all, run, type Script } from '../store/script.js';
import { feedOrderLock, join, sql, typed, valueList } from '../store/sql.js';
import { deliveryBody, findingBody, schemaChangeBody } from './deliveryBody.js';
import { eventFor, type Subscriber } from './events.js';

/**
 * Writes the deliveries a state change owes the subscribers, in the transaction that makes the
 * change: the sink (operations/effects.ts) the one place every change passes
 * (operations/stateChanged.ts) calls, so a decision is pushed if and only if it commits.
 */

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
  changes: readonly StateChange[],
): StateChange[] {
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
  changes: readonly StateChange[],
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

/**
 * The sink (operations/effects.ts) that queues these subscribers' deliveries, on either store;
 * none when nobody subscribes.
 */
export function deliveriesSink(subscribers: readonly Subscriber[]): StateChangeSink | undefined {
  if (subscribers.length === 0) return undefined;
  return (changes) => enqueueDeliveries(subscribers, changes);
}

/** Queues one delivery per subscriber whose `events` match, for each change that raises an event. */
function* enqueueDeliveries(
  subscribers: readonly Subscriber[],
  changes: readonly StateChange[],
): Script<void> {
  const owing = changesOwingDeliveries(subscribers, changes);
  if (owing.length === 0) return;
  const refs = valueList(owing.map((c) => c.ref));
  const facts = yield* all<OperationFacts & { ref: string }>(
    sql`SELECT "marketplaceTransactionRef" AS ref, "operationType" AS "operationType", body, decision_reason, last_error
        FROM outbox WHERE "marketplaceTransactionRef" IN (${refs})`,
  );
  const byRef = new Map(facts.map(({ ref, ...f }) => [ref, f]));
  yield* insertDeliveries(deliveryRows(subscribers, owing, (ref) => byRef.get(ref)));
}

/** Inserts delivery rows in the change's transaction, and wakes this process's dispatchers after it. */
function* insertDeliveries(rows: readonly DeliveryRow[]): Script<void> {
  if (rows.length === 0) return;
  // Delivery ids in commit order where replicas share the store, so a claimer never sees a
  // subscriber's id 6 while id 5 is still in flight and sends it first (subscribers' claim).
  yield* run(feedOrderLock);
  yield* run(sql`
    INSERT INTO deliveries (subscriber, event_type, ref, webhook_id, body, state, attempts, next_attempt_at,
                            created_at, updated_at)
    VALUES ${join(
      rows.map((d) => {
        const at = typed(d.at, 'timestamptz');
        return sql`(${d.subscriber}, ${d.type}, ${d.ref}, ${d.webhookId}, ${d.body}, 'pending', 0, ${at}, ${at}, ${at})`;
      }),
      ', ',
    )}`);
  // After the transaction (the job it runs in is synchronous on SQLite): the dispatchers waiting
  // in this process look for work; their claim goes through the same commit queue, behind it.
  queueMicrotask(notifyEnqueued);
}

/**
 * The sink (mirror/shape/tracker.ts) that queues `schema.changed` deliveries for the subscribers that
 * want them, in the transaction that records the change; none when nobody does.
 */
export function schemaChangesSink(subscribers: readonly Subscriber[]): SchemaChangeSink | undefined {
  const wanting = subscribers.filter((s) => s.events.includes('schema.changed'));
  if (wanting.length === 0) return undefined;
  return (changes) =>
    insertDeliveries(
      changes.flatMap((change) => {
        const body = schemaChangeBody(change, change.at);
        return wanting.map((sub) => ({
          subscriber: sub.key,
          type: 'schema.changed',
          ref: `schema_changes:${change.id}`,
          webhookId: `msg_${randomUUID().replaceAll('-', '')}`,
          body,
          at: change.at,
        }));
      }),
    );
}

/**
 * The deliveries owed for findings opened and resolved (pure but for the random webhook id): one
 * per subscriber asking for the notice's event, `ref` = `reconciliation_findings:<id>`.
 */
export function findingDeliveryRows(
  subscribers: readonly Subscriber[],
  notices: readonly FindingNotice[],
): DeliveryRow[] {
  return notices.flatMap((notice) => {
    const wanting = subscribers.filter((s) => s.events.includes(notice.event));
    if (wanting.length === 0) return [];
    const body = findingBody(notice, notice.at);
    return wanting.map((sub) => ({
      subscriber: sub.key,
      type: notice.event,
      ref: `reconciliation_findings:${notice.id}`,
      webhookId: `msg_${randomUUID().replaceAll('-', '')}`,
      body,
      at: notice.at,
    }));
  });
}

/**
 * The sink (reconcile/pass.ts) that queues `reconciliation.finding` and `reconciliation.resolved`
 * deliveries in the pass's transaction, for the subscribers that ask for them; none when nobody does.
 */
export function findingsSink(subscribers: readonly Subscriber[]): FindingSink | undefined {
  const asking = subscribers.filter(
    (s) => s.events.includes('reconciliation.finding') || s.events.includes('reconciliation.resolved'),
  );
  if (asking.length === 0) return undefined;
  return (notices) => insertDeliveries(findingDeliveryRows(asking, notices));
}

/** Who looks for work when deliveries are queued, per deliveries store (its dispatcher). */
const listeners = new Map<object, () => void>();

/** What the dispatcher running on `store` calls to look for work (it claims after the commit). */
export function onDeliveriesEnqueued(store: object, listener: (() => void) | undefined): void {
  if (listener) listeners.set(store, listener);
  else listeners.delete(store);
}

/**
 * Wakes the dispatchers of this process: the sink does not know its store, and a dispatcher
 * woken for another store's rows only claims and finds none (one thread has one store).
 */
function notifyEnqueued(): void {
  for (const listener of listeners.values()) listener();
}
