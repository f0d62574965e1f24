/**
 * Personal data in webhooks: an operator's decision may quote the notification (its body, or a
 * reason naming the user). Before an event is stored, logged or applied, its body has personal
 * and secret keys masked at any depth, and its body and reason have the personal values of the
 * operation it names masked in every encoding. An event for an operation not known yet gets the
 * structural mask now and the values when its operation is accepted (`maskPendingEvents`).
 */
import type { Statement } from 'better-sqlite3';
import type { Sqlite } from '../db/open.js';
import { perHandle } from '../db/perHandle.js';
import { maskReceived, maskReceivedJson, personalMasker, personalValuesOf } from '../operations/personal.js';
import { bodyOfRef } from '../operations/reads.js';
import type { Interpretation } from './interpret.js';

/** The personal values of the operation `ref` names (none when it is not queued yet). */
function valuesOfRef(sqlite: Sqlite, ref: string | null): string[] {
  if (ref === null) return [];
  return personalValuesOf(bodyOfRef(sqlite, ref));
}

/**
 * The webhook's body and meaning as they may be stored: personal data masked. Takes the body as
 * already parsed (a JSON object), so it is not parsed a second time.
 */
export function maskIncoming(
  sqlite: Sqlite,
  body: Record<string, unknown>,
  meaning: Interpretation,
): { body: string; meaning: Interpretation } {
  return maskIncomingWith(valuesOfRef(sqlite, meaning.ref), body, meaning);
}

/** {@link maskIncoming} given the personal values of the operation named (both stores). Pure. */
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

const eventStatements = perHandle((sqlite: Sqlite) => ({
  // By ref only (indexed): an event is matched to its row by the ref it carries.
  of: sqlite.prepare(
    'SELECT id, body, reason FROM webhook_events WHERE marketplaceTransactionRef = @ref',
  ) as Statement<[{ ref: string }], EventText>,
  set: sqlite.prepare('UPDATE webhook_events SET body = @body, reason = @reason WHERE id = @id') as Statement<
    [EventText]
  >,
}));

/**
 * Masks `mask`'s values out of the stored body and reason of every event naming the operation
 * `ref` (pending ones included). Synchronous: run it inside the
 * transaction that accepts or scrubs the row. Returns how many events changed.
 */
export function maskEventsOf(sqlite: Sqlite, ref: string, mask: (text: string) => string): number {
  const st = eventStatements(sqlite);
  let changed = 0;
  for (const e of st.of.all({ ref })) {
    const masked = maskedEventText(e, mask);
    if (masked) changed += st.set.run(masked).changes;
  }
  return changed;
}

/** The event's texts with `mask` applied, or null when nothing changes. Pure. */
export function maskedEventText(e: EventText, mask: (text: string) => string): EventText | null {
  const body = maskReceived(e.body, mask);
  const reason = e.reason === null ? null : mask(e.reason);
  return body !== e.body || reason !== e.reason ? { id: e.id, body, reason } : null;
}
