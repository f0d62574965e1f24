import type { SchemaChangeNotice } from '../mirror/shape/tracker.js';
import { type FindingNotice, noticeView } from '../reconcile/pass.js';
import type { SubscriberEvent } from './events.js';

/**
 * The body a subscriber receives. Built from allow-listed fields only, so nothing personal (user
 * names, emails, document ids) can reach it whatever the operation held. Pure.
 */

/** What a delivery says about the operation. */
export interface DeliveryFacts {
  ref: string;
  operationType: string;
  state: string;
  /** A rejection's or failure's reason, already masked; omitted when there is none. */
  reason: string | null;
  /** When the operation changed (ISO). */
  at: string;
}

/** The JSON text of one event: `{ type, timestamp, data: { marketplaceTransactionRef, operationType, state, reason?, at } }`. */
export function deliveryBody(type: SubscriberEvent, facts: DeliveryFacts, timestamp: string): string {
  const data: Record<string, string> = {
    marketplaceTransactionRef: facts.ref,
    operationType: facts.operationType,
    state: facts.state,
  };
  if (facts.reason !== null && facts.reason !== '') data.reason = facts.reason;
  data.at = facts.at;
  return JSON.stringify({ type, timestamp, data });
}

/** The JSON text of a `schema.changed` event: `{ type, timestamp, data: { id, resource, field, kind, before, after, mapped, exampleKey, firstSeenAt } }`. */
export function schemaChangeBody(change: SchemaChangeNotice, timestamp: string): string {
  const { id, resource, field, kind, before, after, mapped, exampleKey, at } = change;
  return JSON.stringify({
    type: 'schema.changed',
    timestamp,
    data: { id, resource, field, kind, before, after, mapped, exampleKey, firstSeenAt: at },
  });
}

/**
 * The JSON text of a `reconciliation.finding` or `reconciliation.resolved` event: `{ type, timestamp,
 * data: { id, kind, severity, subject, subjectId, issuanceId, unitId, ref, expectedKg, foundKg,
 * detail, at } }`. Ids, amounts and times only: a finding holds nothing personal.
 */
export function findingBody(notice: FindingNotice, timestamp: string): string {
  return JSON.stringify({ type: notice.event, timestamp, data: noticeView(notice) });
}
