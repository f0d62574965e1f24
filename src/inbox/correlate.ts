/**
 * Matching decisions to operations, written once for both stores: pure decisions, and scripts
 * (store/script.ts) run inside the caller's transaction: the webhook's (record + apply before the
 * 2xx) or the dispatcher's (a row just accepted picks up decisions that arrived early). Side
 * effects that are not SQL (logs, metrics, a custody sync) are returned as {@link DecisionEffect}s
 * for the caller to report after the commit.
 *
 * What makes replicas sharing a store safe (PostgreSQL; SQLite has one writer):
 * - every path that decides on an operation first locks its outbox row ({@link decidingRow}), so
 *   decisions on one row are taken one at a time, each against the state the previous committed;
 * - a replay delivered to two replicas at the same moment meets on the unique index (webhook_id,
 *   body_hash): the second insert waits for the first commit, then stores nothing and is answered
 *   as a replay; an event is always inserted before anything it decides is applied;
 * - a decision whose row does not exist yet is stored `pending` and applied when the row is
 *   accepted (`acceptedDecisions`, the next decision on that row, or the sweep).
 * Locks are taken rows first, the feed's last, so these never deadlock with the operations store;
 * the sweep locks its rows up front, in id order.
 */
import { hash as oneShotHash } from 'node:crypto';
import type { StateChangeSink } from '../operations/effects.js';
import type { OperationSummary } from '../operations/operationsReads.js';
import { type Masker, personalValuesOf } from '../operations/personal.js';
import { OUTBOX_ROW_LOCK } from '../operations/rows.js';
import { nextState, type OperationState } from '../operations/states.js';
import { decide } from '../operations/transitions.js';
import { all, first, run, type Script } from '../store/script.js';
import { raw, type Sql, sql, whenShared } from '../store/sql.js';
import {
  addCustodyIds,
  type EventInsert,
  type EventOutcome,
  eventsByWebhookId,
  insertEvent,
  type PendingEvent,
  pendingByRef,
  setOutcome,
} from './eventStore.js';
import type { DepositIds, Interpretation } from './interpret.js';
import { maskEventsOf, maskIncomingWith } from './mask.js';

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
  // One-shot: no Hash object per webhook (half the cost of createHash for a small body).
  return oneShotHash('sha256', body, 'hex');
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

/** One decision on one operation, as an event states it. */
export interface Decision {
  ref: string;
  decision: 'approved' | 'rejected';
  reason: string | null;
  webhookId: string;
}

/** What deciding `d` with `outcome` on `row` brings about besides the row's move, if anything. Pure. */
export function decisionEffect(
  outcome: EventOutcome,
  row: OperationSummary,
  d: Decision,
): DecisionEffect | undefined {
  const { ref, decision } = d;
  switch (outcome) {
    case 'applied':
      return decision === 'rejected'
        ? { kind: 'rejected', ref, outboxId: row.id, reason: d.reason }
        : { kind: 'approved', ref, outboxId: row.id };
    case 'conflict':
      return {
        kind: 'conflict',
        ref,
        outboxId: row.id,
        decision,
        standing: row.state,
        webhookId: d.webhookId,
      };
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

/** When a script decides, and where the state changes it makes go besides the feed. */
export interface DecidingAt {
  now: string;
  sink: StateChangeSink | undefined;
}

/** An outbox row as deciding needs it, with the body its personal values come from. */
export type DecidingRow = OperationSummary & { body: string };

/** The operation `ref` names, locked until the transaction ends where replicas decide at once. */
export const decidingRow = (ref: string): Sql => sql`
  SELECT id, state, body FROM outbox WHERE "marketplaceTransactionRef" = ${ref} ${whenShared(raw(OUTBOX_ROW_LOCK))}`;

/** Puts a deposit's ids in custody; returns how many rows changed. */
export function* addCustody(deposit: DepositIds, now: string): Script<number> {
  const statement = addCustodyIds(depositedIds(deposit), now);
  return statement ? (yield* run(statement)).rowCount : 0;
}

/** Applies one decision to a row this transaction holds; returns the outcome and any effect (inbox-internal). */
export function* applyOne(
  row: OperationSummary,
  d: Decision,
  at: DecidingAt,
): Script<{ outcome: EventOutcome; effect?: DecisionEffect }> {
  const outcome = outcomeFor(row.state, d.decision);
  const effect = decisionEffect(outcome, row, d);
  if (outcome === 'applied') {
    yield* decide({ id: row.id, ref: d.ref, decision: d.decision, reason: d.reason, now: at.now }, at.sink);
    row.state = d.decision;
  }
  return effect ? { outcome, effect } : { outcome };
}

/**
 * Applies the decisions that arrived for `ref` before its row was accepted, in arrival order, to
 * a row this transaction holds: the first is applied, later ones are duplicates or conflicts.
 * Nothing unless the row is `accepted`.
 */
export function* applyPendingDecisions(
  row: OperationSummary,
  ref: string,
  at: DecidingAt,
): Script<DecisionEffect[]> {
  if (row.state !== 'accepted') return [];
  const effects: DecisionEffect[] = [];
  for (const event of yield* all<PendingEvent>(pendingByRef(ref))) {
    const d = { ref, decision: event.decision, reason: event.reason, webhookId: event.webhook_id };
    const { outcome, effect } = yield* applyOne(row, d, at);
    yield* run(setOutcome(event.id, outcome, row.id, outcome === 'applied' ? at.now : null));
    if (effect) effects.push(effect);
  }
  return effects;
}

/**
 * What an accepted row brings about in the inbox, in the transaction that settles it (or right
 * after). Decisions that came before the row was known were stored with their keys masked only:
 * now its values are masked there too, before a reason is copied over; then the decisions that
 * arrived early are applied. Nothing unless the row is accepted by then.
 */
export function* acceptedDecisions(
  op: { id: number; ref: string; mask: Masker },
  at: DecidingAt,
): Script<DecisionEffect[]> {
  const row = yield* first<DecidingRow>(decidingRow(op.ref));
  if (row?.id !== op.id || row.state !== 'accepted') return [];
  yield* maskEventsOf(op.ref, op.mask);
  return yield* applyPendingDecisions(row, op.ref, at);
}

/** A verified webhook as the handler hands it over: parsed, interpreted, not masked yet. */
export interface ReceivedWebhook {
  webhookId: string;
  receivedAt: string;
  /** The body, a JSON object (masked by the store before it is stored). */
  body: Record<string, unknown>;
  /** sha256 (hex) of the raw body bytes as received: replays compare as sent. */
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
 * Stores one verified event and applies what it decides, in one transaction: answer 2xx only
 * after its commit. Personal data the operator quoted is masked before anything is stored, logged
 * or applied. A replay is the same webhook id with the same body: nothing is stored or changed.
 * The same id with another body is a new fact: stored (flagged `id_reused`) and acted on as new.
 */
export function* recordEvent(
  webhook: ReceivedWebhook,
  sink: StateChangeSink | undefined,
): Script<RecordResult> {
  const { receivedAt: now, webhookId } = webhook;
  const row =
    webhook.meaning.ref === null ? undefined : yield* first<DecidingRow>(decidingRow(webhook.meaning.ref));
  const { body, meaning } = maskIncomingWith(personalValuesOf(row?.body), webhook.body, webhook.meaning);
  const replay: RecordResult = { outcome: 'duplicate', replay: true, idReused: false, effects: [] };
  const prior = yield* all<{ body_hash: string | null; body: string | null }>(eventsByWebhookId(webhookId));
  if (isReplay(prior, webhook.bodyHash)) return replay;
  const idReused = prior.length > 0;
  const base: Omit<EventInsert, 'outcome' | 'outboxId'> = { ...webhook, meaning, body, idReused };
  // False when a replay delivered at the same moment was stored first (the unique index).
  function* store(outcome: EventOutcome, outboxId: number | null): Script<boolean> {
    return (yield* run(insertEvent({ ...base, outcome, outboxId }))).rowCount > 0;
  }
  const done = (outcome: EventOutcome, effects: DecisionEffect[]): RecordResult => {
    if (idReused) effects.push({ kind: 'id-reused', webhookId, ref: meaning.ref, outcome });
    return { outcome, replay: false, idReused, effects };
  };

  if (meaning.decision === 'deposit' && meaning.deposit) {
    // Insert the event first: a replayed id must not touch custody_ids again.
    if (!(yield* store('applied', null))) return replay;
    return done('applied', [{ kind: 'deposit', ids: yield* addCustody(meaning.deposit, now) }]);
  }
  if (meaning.undecided !== null) {
    // Kept with its words and the row it names, so a person (or a later vocabulary) can decide it.
    if (!(yield* store('undecided', row?.id ?? null))) return replay;
    const { ref, type, status, undecided: why } = meaning;
    return done('undecided', [
      { kind: 'undecided', ref, outboxId: row?.id ?? null, webhookId, type, status, why },
    ]);
  }
  if ((meaning.decision !== 'approved' && meaning.decision !== 'rejected') || meaning.ref === null) {
    return (yield* store('ignored', null)) ? done('ignored', []) : replay;
  }
  if (!row) return (yield* store('pending', null)) ? done('pending', []) : replay;
  const d: Decision = { ref: meaning.ref, decision: meaning.decision, reason: meaning.reason, webhookId };
  const at = { now, sink };
  // Earlier decisions still pending for an accepted row go first, so order of arrival decides.
  const effects = yield* applyPendingDecisions(row, d.ref, at);
  const outcome = outcomeFor(row.state, d.decision);
  if (!(yield* store(outcome, row.id))) return { ...replay, effects };
  const applied = yield* applyOne(row, d, at);
  if (applied.effect) effects.push(applied.effect);
  return done(outcome, effects);
}

/**
 * Safety net: applies pending decisions to every row that is accepted by now, whatever path
 * accepted it. Rows another transaction holds are being decided there (it applies their pending
 * first), so they are skipped.
 */
export function* sweepPendingDecisions(at: DecidingAt): Script<DecisionEffect[]> {
  const rows = yield* all<OperationSummary & { ref: string }>(sql`
    SELECT o.id, o."marketplaceTransactionRef" AS ref, o.state FROM outbox o
     WHERE o.state = 'accepted'
       AND EXISTS (SELECT 1 FROM webhook_events e
                    WHERE e."marketplaceTransactionRef" = o."marketplaceTransactionRef" AND e.outcome = 'pending')
     ORDER BY o.id ${whenShared(raw(`${OUTBOX_ROW_LOCK} OF o SKIP LOCKED`))}`);
  const effects: DecisionEffect[] = [];
  for (const row of rows) effects.push(...(yield* applyPendingDecisions(row, row.ref, at)));
  return effects;
}
