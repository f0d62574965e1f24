/**
 * Personal data in webhooks: an operator's decision may quote the notification (its body, or a
 * reason naming the user). Before an event is stored, logged or applied, its body has personal
 * and secret keys masked at any depth, and its body and reason have the personal values of the
 * operation it names masked in every encoding. An event for an operation not known yet gets the
 * structural mask now and the values when its operation is accepted (`acceptedDecisions`).
 */
import { maskReceived, maskReceivedJson, personalMasker } from '../operations/personal.js';
import { all, run, type Script } from '../store/script.js';
import { sql, whenShared } from '../store/sql.js';
import type { Interpretation } from './interpret.js';

/**
 * The webhook's body and meaning as they may be stored: personal data masked, given the personal
 * values of the operation it names. Takes the body as already parsed (a JSON object), so it is not
 * parsed a second time. Pure.
 */
export function maskIncomingWith(
  values: readonly string[],
  body: Record<string, unknown>,
  meaning: Interpretation,
): { body: string; meaning: Interpretation } {
  const mask = personalMasker(values);
  return {
    body: maskReceivedJson(body, mask),
    meaning: meaning.reason === null ? meaning : { ...meaning, reason: mask(meaning.reason) },
  };
}

/** A stored event's texts that may quote personal values. */
export interface EventText {
  id: number;
  body: string;
  reason: string | null;
}

/**
 * Masks `mask`'s values out of the stored body and reason of every event naming the operation
 * `ref` (pending ones included), in the transaction that accepts or scrubs the row. Returns how
 * many events changed.
 */
export function* maskEventsOf(ref: string, mask: (text: string) => string): Script<number> {
  // By ref only (indexed): an event is matched to its row by the ref it carries.
  const events = yield* all<EventText>(sql`
    SELECT id, body, reason FROM webhook_events WHERE "marketplaceTransactionRef" = ${ref}
     ORDER BY id ${whenShared(sql`FOR UPDATE`)}`);
  let changed = 0;
  for (const e of events) {
    const masked = maskedEventText(e, mask);
    if (!masked) continue;
    const { rowCount } = yield* run(
      sql`UPDATE webhook_events SET body = ${masked.body}, reason = ${masked.reason} WHERE id = ${masked.id}`,
    );
    changed += rowCount;
  }
  return changed;
}

/** The event's texts with `mask` applied, or null when nothing changes. Pure. */
export function maskedEventText(e: EventText, mask: (text: string) => string): EventText | null {
  const body = maskReceived(e.body, mask);
  const reason = e.reason === null ? null : mask(e.reason);
  return body !== e.body || reason !== e.reason ? { id: e.id, body, reason } : null;
}
