/**
 * Matching decisions to operations. Everything here is synchronous and runs inside the caller's
 * better-sqlite3 transaction: the listener's (record + apply before the 2xx) or the dispatcher's
 * (a row just marked accepted picks up decisions that arrived early). Side effects that are not
 * SQL (logs, metrics, a custody sync) are returned as {@link DecisionEffect}s for the caller to
 * report after the commit.
 */
import { createHash } from 'node:crypto';
import type { Sqlite } from '../db/open.js';
import type { Masker } from '../operations/personal.js';
import {
  acceptedWithPendingDecisions,
  type OperationSummary,
  stateById,
  stateByRef,
} from '../operations/reads.js';
import { nextState, type OperationState } from '../operations/states.js';
import { recordDecision } from '../operations/store.js';
import { inboxStatements } from './eventStore.js';
import type { DepositIds, Interpretation } from './interpret.js';
import { maskEventsOf } from './mask.js';

/** What became of one stored event (`webhook_events.outcome`). */
export type EventOutcome = 'applied' | 'pending' | 'duplicate' | 'conflict' | 'ignored' | 'undecided';

/** Something the caller reports after the commit (logs, metrics, hooks). */
export type DecisionEffect =
  | { kind: 'approved'; ref: string; outboxId: number }
  | { kind: 'rejected'; ref: string; outboxId: number; reason: string | null }
  | { kind: 'conflict'; ref: string; outboxId: number; decision: string; standing: string; webhookId: string }
  | { kind: 'unexpected-state'; ref: string; outboxId: number; state: string; decision: string }
  | { kind: 'deposit'; ids: number }
  | {
      kind: 'undecided';
      ref: string | null;
      outboxId: number | null;
      webhookId: string;
      type: string | null;
      status: string | null;
      why: string;
    }
  | { kind: 'id-reused'; webhookId: string; ref: string | null; outcome: EventOutcome };

/** sha256 (hex) of a body: raw bytes as received, or (rows stored before body_hash) the stored text. */
export function bodyHash(body: Uint8Array | string): string {
  return createHash('sha256').update(body).digest('hex');
}

/** The operation's event a decision is (see operations/states.ts). */
const DECISION_EVENT = { approved: 'approve', rejected: 'reject' } as const;

/** The outcome for a decision given the state of its outbox row (null: no row yet). Pure. */
export function outcomeFor(rowState: OperationState | null, decision: 'approved' | 'rejected'): EventOutcome {
  // Applied exactly where the transition table lets the decision move the row.
  if (rowState !== null && nextState(rowState, DECISION_EVENT[decision]).ok) return 'applied';
  switch (rowState) {
    case null:
    case 'queued':
    case 'sending':
      // The operator decided before our own 2xx was recorded: keep it until the row is accepted.
      return 'pending';
    case 'approved':
    case 'rejected':
      return rowState === decision ? 'duplicate' : 'conflict';
    default:
      // failed / cancelled: we gave up on a row the operator did receive; keep the event, change nothing.
      return 'ignored';
  }
}

/** What deciding `decision` on a row in `state` brings about besides the row's move, if anything. Pure. */
export function decisionEffect(
  outcome: EventOutcome,
  row: OperationSummary,
  ref: string,
  decision: 'approved' | 'rejected',
  reason: string | null,
  webhookId: string,
): DecisionEffect | undefined {
  switch (outcome) {
    case 'applied':
      return decision === 'rejected'
        ? { kind: 'rejected', ref, outboxId: row.id, reason }
        : { kind: 'approved', ref, outboxId: row.id };
    case 'conflict':
      return { kind: 'conflict', ref, outboxId: row.id, decision, standing: row.state, webhookId };
    case 'ignored':
      return { kind: 'unexpected-state', ref, outboxId: row.id, state: row.state, decision };
    default:
      return undefined;
  }
}

/** Whether one of the earlier events with a webhook id had this body (a replay). Pure. */
export function isReplay(
  prior: ReadonlyArray<{ body_hash: string | null; body: string | null }>,
  hash: string,
): boolean {
  return prior.some((p) => (p.body_hash ?? bodyHash(p.body ?? '')) === hash);
}

/** The (kind, id) pairs a deposit puts in custody, in payload order. Pure. */
export function depositedIds(deposit: DepositIds): Array<[kind: string, id: string]> {
  return (Object.entries(deposit) as Array<[string, string[]]>).flatMap(([kind, list]) =>
    list.map((id): [string, string] => [kind, id]),
  );
}

/** Applies one decision to one row in its current state; returns the outcome and any effect (inbox-internal). */
export function applyOne(
  sqlite: Sqlite,
  row: OperationSummary,
  ref: string,
  decision: 'approved' | 'rejected',
  reason: string | null,
  webhookId: string,
  nowIso: string,
): { outcome: EventOutcome; effect?: DecisionEffect } {
  const outcome = outcomeFor(row.state, decision);
  const effect = decisionEffect(outcome, row, ref, decision, reason, webhookId);
  if (outcome === 'applied') {
    recordDecision(sqlite, { id: row.id, ref, decision, reason, now: nowIso });
    row.state = decision;
  }
  return effect ? { outcome, effect } : { outcome };
}

/**
 * Applies the decisions that arrived for `ref` before its row was accepted. Call it inside the
 * transaction that marks the row accepted (synchronous: no awaits), and also whenever a row is
 * enqueued or becomes accepted by any other path. The first pending decision is applied; later
 * ones are duplicates or conflicts. Does nothing unless the row is `accepted`.
 * Returns what to report after the commit (see `reportDecisionEffects`); callers may ignore it.
 */
export function applyPendingDecisions(
  sqlite: Sqlite,
  outboxId: number,
  ref: string,
  nowIso: string,
): DecisionEffect[] {
  const st = inboxStatements(sqlite);
  const pending = st.pendingByRef.all(ref);
  if (pending.length === 0) return [];
  const row = stateById(sqlite, outboxId);
  if (row?.state !== 'accepted') return [];
  const effects: DecisionEffect[] = [];
  for (const event of pending) {
    const { outcome, effect } = applyOne(
      sqlite,
      row,
      ref,
      event.decision,
      event.reason,
      event.webhook_id,
      nowIso,
    );
    st.setOutcome.run(outcome, row.id, outcome === 'applied' ? nowIso : null, event.id);
    if (effect) effects.push(effect);
  }
  return effects;
}

/**
 * What an accepted row brings about in the inbox (SQLite). Decisions that came before the row was
 * known were stored with their keys masked only: now that the row is accepted its values are
 * masked there too, before a reason is copied over; then the decisions that arrived early are
 * applied. Synchronous, for the transaction that settles the row; nothing unless it is accepted.
 */
export function acceptedDecisions(
  sqlite: Sqlite,
  op: { id: number; ref: string; mask: Masker },
  nowIso: string,
): DecisionEffect[] {
  if (stateById(sqlite, op.id)?.state !== 'accepted') return [];
  maskEventsOf(sqlite, op.ref, op.mask);
  return applyPendingDecisions(sqlite, op.id, op.ref, nowIso);
}

/** A verified webhook, ready to store. */
export interface IncomingEvent {
  webhookId: string;
  receivedAt: string;
  /** The raw body as text (already known to be a JSON object). */
  body: string;
  /** {@link bodyHash} of the raw body bytes. */
  bodyHash: string;
  meaning: Interpretation;
}

/** What recording one event did. */
export interface RecordResult {
  /** `duplicate` also when the webhook id was seen before (nothing stored the second time). */
  outcome: EventOutcome;
  /** Whether this delivery repeated a webhook id already stored with the same body. */
  replay: boolean;
  /** Whether an earlier event had this webhook id with another body (stored and acted on as new). */
  idReused: boolean;
  effects: DecisionEffect[];
}

/**
 * Stores one verified event and applies what it decides. Synchronous; run it inside a transaction
 * so the event and its effect commit together, and answer 2xx only after the commit.
 * A replay is the same webhook id with the same body: nothing is stored or changed. The same id
 * with another body is a new fact: stored (flagged `id_reused`) and acted on like any event.
 */
export function recordEvent(sqlite: Sqlite, event: IncomingEvent): RecordResult {
  const st = inboxStatements(sqlite);
  const { meaning, receivedAt: now } = event;
  const replay: RecordResult = { outcome: 'duplicate', replay: true, idReused: false, effects: [] };
  const prior = st.eventsByWebhookId.all(event.webhookId);
  if (isReplay(prior, event.bodyHash)) return replay;
  const idReused = prior.length > 0;
  const store = (outcome: EventOutcome, outboxId: number | null): boolean =>
    st.insertEvent.get(
      event.webhookId,
      now,
      meaning.type,
      meaning.status,
      meaning.ref,
      meaning.decision,
      meaning.reason,
      event.body,
      event.bodyHash,
      idReused ? 1 : 0,
      outboxId,
      outcome,
      outcome === 'applied' ? now : null,
    ) !== undefined;
  const done = (outcome: EventOutcome, effects: DecisionEffect[]): RecordResult => {
    if (idReused) effects.push({ kind: 'id-reused', webhookId: event.webhookId, ref: meaning.ref, outcome });
    return { outcome, replay: false, idReused, effects };
  };

  if (meaning.decision === 'deposit' && meaning.deposit) {
    // Insert the event first: a replayed id must not touch custody_ids again.
    if (!store('applied', null)) return replay;
    let ids = 0;
    for (const [kind, id] of depositedIds(meaning.deposit))
      ids += st.insertCustodyId.run(kind, id, now).changes;
    return done('applied', [{ kind: 'deposit', ids }]);
  }

  if (meaning.undecided !== null) {
    // Kept with its words and the row it names, so a person (or a later vocabulary) can decide it.
    const row = meaning.ref === null ? undefined : stateByRef(sqlite, meaning.ref);
    if (!store('undecided', row?.id ?? null)) return replay;
    return done('undecided', [
      {
        kind: 'undecided',
        ref: meaning.ref,
        outboxId: row?.id ?? null,
        webhookId: event.webhookId,
        type: meaning.type,
        status: meaning.status,
        why: meaning.undecided,
      },
    ]);
  }

  if ((meaning.decision !== 'approved' && meaning.decision !== 'rejected') || meaning.ref === null) {
    return store('ignored', null) ? done('ignored', []) : replay;
  }

  const ref = meaning.ref;
  const row = stateByRef(sqlite, ref);
  const effects: DecisionEffect[] = [];
  // Earlier decisions still pending for an accepted row go first, so order of arrival decides.
  if (row?.state === 'accepted') effects.push(...applyPendingDecisions(sqlite, row.id, ref, now));
  const current = row ? stateById(sqlite, row.id) : undefined;
  if (!current) {
    return store('pending', null) ? done('pending', effects) : replay;
  }
  // Decide against a copy: if the id turns out to be a replay, the insert fails and nothing changes.
  const outcome = outcomeFor(current.state, meaning.decision);
  if (!store(outcome, current.id)) return { ...replay, effects };
  const applied = applyOne(sqlite, current, ref, meaning.decision, meaning.reason, event.webhookId, now);
  if (applied.effect) effects.push(applied.effect);
  return done(outcome, effects);
}

/**
 * Safety net: applies pending decisions to every row that is accepted by now, whatever path
 * accepted it. Run it inside a transaction, now and then.
 */
export function sweepPendingDecisions(sqlite: Sqlite, nowIso: string): DecisionEffect[] {
  const effects: DecisionEffect[] = [];
  for (const { id, ref } of acceptedWithPendingDecisions(sqlite)) {
    effects.push(...applyPendingDecisions(sqlite, id, ref, nowIso));
  }
  return effects;
}
