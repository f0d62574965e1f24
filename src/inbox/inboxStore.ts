import type { StateChangeSink } from '../operations/effects.js';
import type { Masker } from '../operations/personal.js';
import { stateChangeSinkOf } from '../sqlite/changes.js';
import { commitQueueFor } from '../sqlite/commitQueue.js';
import type { Sqlite } from '../sqlite/open.js';
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
import type { InboxStore } from './storeSeam.js';
import type { Vocabulary } from './vocabulary.js';

/** Options of {@link ScriptInboxStore}. */
export interface ScriptInboxStoreOptions {
  /** What each decision applied writes in its transaction besides the feed (default: nothing). */
  onStateChange?: StateChangeSink | undefined;
}

/**
 * The inbox store (storeSeam.ts) over either store's scripts: each call runs the rules of
 * correlate.ts, reread.ts and mask.ts in one transaction (on SQLite one job of the connection's
 * group commit, on PostgreSQL one transaction, safe with several replicas at once).
 */
export class ScriptInboxStore implements InboxStore {
  private readonly sink: StateChangeSink | undefined;

  constructor(
    private readonly store: ScriptStore,
    options: ScriptInboxStoreOptions = {},
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

  async recordRejection(atIso: string, status: number, reason: string): Promise<void> {
    // One statement on its own (autocommit): a refusal never waits for the group commit.
    await this.store.read(insertRejection(atIso, status, reason));
  }

  maintain(nowIso: string, pruneBeforeIso: string): Promise<{ effects: DecisionEffect[]; pruned: number }> {
    const at = this.at(nowIso);
    return this.store.transaction(
      (function* () {
        const effects = yield* sweepPendingDecisions(at);
        return { effects, pruned: (yield* run(pruneRejections(pruneBeforeIso))).rowCount };
      })(),
    );
  }

  /** One transaction per event that now decides, so two replicas starting at once act on it once. */
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

  decisionConflicts(): Promise<ConflictRow[]> {
    return this.store.read<ConflictRow>(decisionConflicts());
  }

  afterAccepted(op: { id: number; ref: string; mask: Masker }, nowIso: string): Promise<DecisionEffect[]> {
    // Not durable, as the dispatcher's settle: the sweep applies them again should a power loss take them back.
    return this.store.transaction(acceptedDecisions(op, this.at(nowIso)), { durable: false });
  }

  maskEventsOf(ref: string, mask: Masker): Promise<number> {
    return this.store.transaction(maskEventsOf(ref, mask));
  }
}

/** The inbox store of a SQLite handle: its state changes go to the sink handed to the handle. */
export function sqliteInboxStore(sqlite: Sqlite): ScriptInboxStore {
  // Asked at each change: the root may hand the handle its sink after this store is made.
  const onStateChange: StateChangeSink = function* (changes) {
    const sink = stateChangeSinkOf(sqlite);
    if (sink) yield* sink(changes);
  };
  return new ScriptInboxStore(commitQueueFor(sqlite), { onStateChange });
}
