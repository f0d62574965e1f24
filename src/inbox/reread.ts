/**
 * Undecided events read again with the current vocabulary. The vocabulary only changes with the
 * configuration, so this runs once when the listener starts: an operator who adds the operator's
 * word to `webhook.decisions` and restarts gets the stored decisions applied, in arrival order.
 * Synchronous; run it inside a transaction.
 */
import type { Sqlite } from '../db/open.js';
import { stateByRef } from '../operations/reads.js';
import {
  applyOne,
  applyPendingDecisions,
  type DecisionEffect,
  depositedIds,
  outcomeFor,
} from './correlate.js';
import { inboxStatements } from './eventStore.js';
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
 * Pure; both stores' rereads use it.
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

export function rereadUndecided(
  sqlite: Sqlite,
  fields: PayloadFields,
  vocabulary: Vocabulary,
  nowIso: string,
): RereadResult {
  const st = inboxStatements(sqlite);
  const effects: DecisionEffect[] = [];
  let resolved = 0;
  for (const event of st.undecidedEvents.all()) {
    const meaning = rereadMeaning(event.body, fields, vocabulary);
    if (meaning === null) continue;
    resolved += 1;
    const { decision, ref, reason } = meaning;
    if (decision === 'deposit' && meaning.deposit) {
      let ids = 0;
      for (const [kind, id] of depositedIds(meaning.deposit))
        ids += st.insertCustodyId.run(kind, id, nowIso).changes;
      st.redecide.run(decision, null, 'applied', null, nowIso, event.id);
      effects.push({ kind: 'deposit', ids });
      continue;
    }
    if ((decision !== 'approved' && decision !== 'rejected') || ref === null) {
      st.redecide.run(decision, null, 'ignored', null, null, event.id);
      continue;
    }
    const row = stateByRef(sqlite, ref);
    if (!row || row.state === 'accepted' || outcomeFor(row.state, decision) === 'pending') {
      // Joins the pending decisions of its operation; applied in arrival order once it is accepted.
      st.redecide.run(decision, reason, 'pending', null, null, event.id);
      if (row?.state === 'accepted') effects.push(...applyPendingDecisions(sqlite, row.id, ref, nowIso));
      continue;
    }
    // Already decided (by a later webhook) or given up: a duplicate, a conflict, or ignored.
    const applied = applyOne(sqlite, row, ref, decision, reason, event.webhook_id, nowIso);
    st.redecide.run(decision, reason, applied.outcome, row.id, null, event.id);
    if (applied.effect) effects.push(applied.effect);
  }
  return { resolved, effects };
}
