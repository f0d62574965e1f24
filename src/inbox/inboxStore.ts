import type { StateChangeSink } from '../operations/effects.js';
import type { Masker } from '../operations/personal.js';
import { REQUEST_BUSY_GRACE_MS, run, type ScriptStore } from '../store/script.js';
import {
  acceptedDecisions,
  type DecidingAt,
  type DecisionEffect,
  type ReceivedWebhook,
  type RecordResult,
  recordEvent,
  sweepPendingDecisions,
} from './correlate.js';
import {
  type ConflictRow,
  decisionConflicts,
  insertRejection,
  pruneRejections,
  undecidedEvents,
} from './eventStore.js';
import type { PayloadFields } from './interpret.js';
import { maskEventsOf } from './mask.js';
import { type RereadResult, redecideEvent, rereadMeaning } from './reread.js';
import type { Vocabulary } from './vocabulary.js';

/** Options of {@link InboxStore}. */
export interface InboxStoreOptions {
  /** What each decision applied writes in its transaction besides the feed (default: nothing). */
  onStateChange?: StateChangeSink | undefined;
}

/**
 * The webhook inbox's store, at the granularity of one webhook and of the batch jobs around it,
 * over either store's scripts: each call runs the rules of correlate.ts, reread.ts and mask.ts in
 * one transaction (on SQLite one job of the connection's group commit, on PostgreSQL one
 * transaction, safe with several replicas at once). `receive` masks the event's personal data,
 * recognises a replay (webhook id + body hash), records it, correlates it with its outbox row and
 * applies its decision through the transition table (operations/transitions.ts `decide`), the
 * row's feed rows and deliveries included. Side effects that are not SQL come back as
 * {@link DecisionEffect}s to report after the commit.
 */
export class InboxStore {
  private readonly sink: StateChangeSink | undefined;

  constructor(
    private readonly store: ScriptStore,
    options: InboxStoreOptions = {},
  ) {
    this.sink = options.onStateChange;
  }

  private at(now: string): DecidingAt {
    return { now, sink: this.sink };
  }

  receive(webhook: ReceivedWebhook): Promise<RecordResult> {
    // Masked, recorded and applied in one transaction; under another process's lock the sender
    // is told to retry rather than kept waiting.
    return this.store.transaction(recordEvent(webhook, this.sink), { busyGraceMs: REQUEST_BUSY_GRACE_MS });
  }

  /** Records a refused request (status and reason only: nothing the sender sent is kept). */
  async recordRejection(atIso: string, status: number, reason: string): Promise<void> {
    // One statement on its own (autocommit): a refusal never waits for the group commit.
    await this.store.read(insertRejection(atIso, status, reason));
  }

  /** Applies pending decisions to every row accepted by now, and deletes refusals before `pruneBeforeIso`. */
  maintain(nowIso: string, pruneBeforeIso: string): Promise<{ effects: DecisionEffect[]; pruned: number }> {
    const at = this.at(nowIso);
    return this.store.transaction(
      (function* () {
        const effects = yield* sweepPendingDecisions(at);
        return { effects, pruned: (yield* run(pruneRejections(pruneBeforeIso))).rowCount };
      })(),
    );
  }

  /**
   * Reads the undecided events again with this vocabulary (at start-up) and acts on what now
   * decides: one transaction per event, so two replicas starting at once act on it once.
   */
  async rereadUndecided(
    fields: PayloadFields,
    vocabulary: Vocabulary,
    nowIso: string,
  ): Promise<RereadResult> {
    const events = await this.store.read<{ id: number; webhook_id: string; body: string }>(undecidedEvents());
    const effects: DecisionEffect[] = [];
    let resolved = 0;
    for (const event of events) {
      const meaning = rereadMeaning(event.body, fields, vocabulary);
      if (meaning === null) continue;
      const done = await this.store.transaction(redecideEvent(event, meaning, this.at(nowIso)));
      if (done === null) continue;
      resolved += 1;
      effects.push(...done);
    }
    return { resolved, effects };
  }

  /** Webhook events recorded as conflicting decisions (a critical problem for status). */
  decisionConflicts(): Promise<ConflictRow[]> {
    return this.store.read<ConflictRow>(decisionConflicts());
  }

  /**
   * A row just accepted: masks its personal values (`mask`) in the events naming it, then applies
   * the decisions that arrived early. Nothing unless the row is accepted by then.
   */
  afterAccepted(op: { id: number; ref: string; mask: Masker }, nowIso: string): Promise<DecisionEffect[]> {
    // Not durable, as the dispatcher's settle: the sweep applies them again should a power loss take them back.
    return this.store.transaction(acceptedDecisions(op, this.at(nowIso)), { durable: false });
  }

  /** Masks `mask`'s values out of every event naming `ref` (a scrubbed row); returns how many changed. */
  maskEventsOf(ref: string, mask: Masker): Promise<number> {
    return this.store.transaction(maskEventsOf(ref, mask));
  }
}
