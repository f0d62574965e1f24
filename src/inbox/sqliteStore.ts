import { commitQueueFor, REQUEST_BUSY_GRACE_MS } from '../db/commitQueue.js';
import type { Sqlite } from '../db/open.js';
import type { Masker } from '../operations/personal.js';
import { DISPATCHER_WORK } from '../operations/sqliteStore.js';
import {
  acceptedDecisions,
  type DecisionEffect,
  type RecordResult,
  recordEvent,
  sweepPendingDecisions,
} from './correlate.js';
import { type ConflictRow, decisionConflicts, pruneRejections, recordRejection } from './eventStore.js';
import type { PayloadFields } from './interpret.js';
import { maskEventsOf, maskIncoming } from './mask.js';
import { type RereadResult, rereadUndecided } from './reread.js';
import type { InboxStore, ReceivedWebhook } from './storeSeam.js';
import type { Vocabulary } from './vocabulary.js';

/**
 * The inbox store seam on SQLite: the synchronous functions of correlate.ts, eventStore.ts,
 * mask.ts and reread.ts, unchanged. A webhook is masked before its job (reads only) and recorded
 * and applied in ONE job of the connection's group commit, as before the seam.
 */
export class SqliteInboxStore implements InboxStore {
  constructor(private readonly sqlite: Sqlite) {}

  receive(webhook: ReceivedWebhook): Promise<RecordResult> {
    const { sqlite } = this;
    return commitQueueFor(sqlite).submit(
      () => {
        // Personal data the operator quoted is masked before anything is stored, logged or
        // applied. Inside the job: its read of the operation's body is then one more statement of
        // the group's transaction, not a read transaction of its own (7.7 % of the listener's
        // loop in a quiet profile of `npm run bench -- --only webhooks`).
        const { body, meaning } = maskIncoming(sqlite, webhook.body, webhook.meaning);
        return recordEvent(sqlite, {
          webhookId: webhook.webhookId,
          receivedAt: webhook.receivedAt,
          body,
          bodyHash: webhook.bodyHash,
          meaning,
        });
      },
      // Under another process's lock the sender is told to retry rather than kept waiting.
      { busyGraceMs: REQUEST_BUSY_GRACE_MS },
    );
  }

  recordRejection(atIso: string, status: number, reason: string): Promise<void> {
    // One autocommit statement, as before the seam (a refusal never waits for the group commit).
    return new Promise((resolve) => {
      recordRejection(this.sqlite, atIso, status, reason);
      resolve();
    });
  }

  maintain(nowIso: string, pruneBeforeIso: string): Promise<{ effects: DecisionEffect[]; pruned: number }> {
    return commitQueueFor(this.sqlite).submit(() => ({
      effects: sweepPendingDecisions(this.sqlite, nowIso),
      pruned: pruneRejections(this.sqlite, pruneBeforeIso),
    }));
  }

  rereadUndecided(fields: PayloadFields, vocabulary: Vocabulary, nowIso: string): Promise<RereadResult> {
    return commitQueueFor(this.sqlite).submit(() => rereadUndecided(this.sqlite, fields, vocabulary, nowIso));
  }

  decisionConflicts(): Promise<ConflictRow[]> {
    return Promise.resolve(decisionConflicts(this.sqlite));
  }

  afterAccepted(op: { id: number; ref: string; mask: Masker }, nowIso: string): Promise<DecisionEffect[]> {
    // As the dispatcher's settle (DISPATCHER_WORK): the sweep applies them again should a power loss take them back.
    return commitQueueFor(this.sqlite).submit(
      () => acceptedDecisions(this.sqlite, op, nowIso),
      DISPATCHER_WORK,
    );
  }

  maskEventsOf(ref: string, mask: Masker): Promise<number> {
    return commitQueueFor(this.sqlite).submit(() => maskEventsOf(this.sqlite, ref, mask));
  }
}
