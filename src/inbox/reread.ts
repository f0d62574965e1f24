/**
 * Undecided events read again with the current vocabulary. The vocabulary only changes with the
 * configuration, so this runs once when the listener starts: an operator who adds the operator's
 * word to `webhook.decisions` and restarts gets the stored decisions applied, in arrival order.
 */
import { first, run, type Script } from '../store/script.js';
import {
  addCustody,
  applyOne,
  applyPendingDecisions,
  type DecidingAt,
  type DecidingRow,
  type DecisionEffect,
  decidingRow,
  outcomeFor,
} from './correlate.js';
import { redecide, stillUndecided } from './eventStore.js';
import { type Interpretation, interpretPayload, type PayloadFields } from './interpret.js';
import type { Vocabulary } from './vocabulary.js';

/** What reading the undecided events again did. */
export interface RereadResult {
  /** Events that now decide (or are now known to decide nothing). */
  resolved: number;
  effects: DecisionEffect[];
}

/**
 * What a stored event's body decides under the current vocabulary, or null when it still decides
 * nothing or cannot be read (stored bodies are JSON objects; a row edited by hand stays as it is).
 * Pure.
 */
export function rereadMeaning(
  body: string,
  fields: PayloadFields,
  vocabulary: Vocabulary,
): Interpretation | null {
  let payload: unknown;
  try {
    payload = JSON.parse(body);
  } catch {
    return null;
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return null;
  const meaning = interpretPayload(payload as Record<string, unknown>, fields, vocabulary);
  return meaning.undecided === null ? meaning : null;
}

/**
 * Acts on one undecided event that now decides, in its own transaction, as a webhook does; null
 * when it is undecided no more (another replica starting at the same time read it again first).
 */
export function* redecideEvent(
  event: { id: number; webhook_id: string },
  meaning: Interpretation,
  at: DecidingAt,
): Script<DecisionEffect[] | null> {
  if (!(yield* first(stillUndecided(event.id)))) return null;
  const { decision, ref, reason } = meaning;
  if (decision === 'deposit' && meaning.deposit) {
    const ids = yield* addCustody(meaning.deposit, at.now);
    yield* run(
      redecide(event.id, { decision, reason: null, outcome: 'applied', outboxId: null, at: at.now }),
    );
    return [{ kind: 'deposit', ids }];
  }
  if ((decision !== 'approved' && decision !== 'rejected') || ref === null) {
    yield* run(redecide(event.id, { decision, reason: null, outcome: 'ignored', outboxId: null, at: null }));
    return [];
  }
  const row = yield* first<DecidingRow>(decidingRow(ref));
  if (!row || row.state === 'accepted' || outcomeFor(row.state, decision) === 'pending') {
    // Joins the pending decisions of its operation; applied in arrival order once it is accepted.
    yield* run(redecide(event.id, { decision, reason, outcome: 'pending', outboxId: null, at: null }));
    return row ? yield* applyPendingDecisions(row, ref, at) : [];
  }
  // Already decided (by a later webhook) or given up: a duplicate, a conflict, or ignored.
  const applied = yield* applyOne(row, { ref, decision, reason, webhookId: event.webhook_id }, at);
  yield* run(redecide(event.id, { decision, reason, outcome: applied.outcome, outboxId: row.id, at: null }));
  return applied.effect ? [applied.effect] : [];
}
