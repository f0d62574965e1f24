import { errorMessage } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import type { Config } from '../config/config.js';
import type { DecisionEffect } from '../inbox/correlate.js';
import type { InboxStore } from '../inbox/inboxStore.js';
import type { OperationRow } from '../operations/rows.js';
import type { ScriptStore } from '../store/script.js';
import { type PauseRecord, pauseRecord } from './pause.js';
import { scrubFinished } from './scrub.js';
import { maskerFor } from './settle.js';

/**
 * What the dispatcher does beside the operations store seam, on the same database: the webhook
 * inbox's side of an accepted row (decisions that arrived before it was accepted), the scrub
 * of finished rows' personal fields, and the record of an auth pause.
 */
export interface OutboxHooks {
  /**
   * Masks the row's personal values in its webhook events and applies the decisions that arrived
   * early; resolves with what to report (see reportDecisionEffects), nothing unless the row is
   * accepted by then. Called in the same turn as the row's settle, with the settle's promise
   * (true: it moved the row).
   */
  afterAccepted(row: OperationRow, nowIso: string, settled: Promise<boolean>): Promise<DecisionEffect[]>;
  /** Scrubs the personal fields of rows finished at least `afterDays` ago; resolves with how many. */
  scrubFinished(nowMs: number, afterDays: number): Promise<number>;
  /** Where the auth pause is recorded, for `vcu-sync status` and the next start. */
  pause: PauseRecord;
}

/** The hooks over a store: its scripts and its inbox, and what its adapter does after a scrub. */
export function outboxHooks(
  store: ScriptStore,
  inbox: Pick<InboxStore, 'afterAccepted'>,
  /** Erases what the store keeps of the scrubbed values (SQLite: its WAL), given how many rows scrubbed. */
  afterScrub: (rows: number) => void,
): OutboxHooks {
  const shared = store.dialect.capabilities.sharedByProcesses;
  return {
    afterAccepted: async (row, nowIso, settled) => {
      // One process's transactions commit in the order they are submitted (SQLite's group commit):
      // submitted now, the effects share the settle's commit (a power loss may take both back; the
      // inbox's sweep applies them again). Where transactions run side by side they would find the
      // row still `sending`: they wait for the settle. A failed settle is the dispatcher's to report;
      // a lost lease leaves the row to its new owner.
      if (shared && !(await settled.catch(() => false))) return [];
      return inbox.afterAccepted(
        { id: row.id, ref: row.marketplaceTransactionRef, mask: maskerFor(row) },
        nowIso,
      );
    },
    scrubFinished: async (nowMs, afterDays) => {
      const rows = await scrubFinished(store, nowMs, afterDays);
      afterScrub(rows);
      return rows;
    },
    pause: pauseRecord(store),
  };
}

/**
 * Another part's housekeeping run after the scrub, handed in by the root that wires the
 * dispatcher (the subscribers' prune, subscribers/housekeeping.ts); logs its own outcome and never
 * rejects.
 */
export type HousekeepingJob = (nowMs: number) => Promise<void>;

/**
 * When the dispatcher scrubs rows finished `outbox.scrub_after_days` ago, then runs the job handed
 * in (old deliveries pruned): at most every `scrubEveryMs` (default: 3600000), one run at a time,
 * off its loop (a backlog may take a while). Each part's failure is logged and tried again at the
 * next period, without stopping the other.
 */
export class ScrubSchedule {
  private lastMs = Number.NEGATIVE_INFINITY;
  private running: Promise<void> | undefined;

  constructor(
    private readonly hooks: OutboxHooks,
    private readonly log: Logger,
    private readonly config: Config,
    /** The dispatcher's options: the period, and the job run after each scrub (default: none). */
    private readonly handed: { scrubEveryMs?: number; housekeeping?: HousekeepingJob },
  ) {}

  /** Starts a run if one is due and none runs. */
  maybe(nowMs: number): void {
    if (this.running || nowMs - this.lastMs < (this.handed.scrubEveryMs ?? 3_600_000)) return;
    this.lastMs = nowMs;
    const run = this.scrub(nowMs).then(() => this.handed.housekeeping?.(nowMs));
    this.running = run;
    void run.finally(() => {
      this.running = undefined;
    });
  }

  private scrub(nowMs: number): Promise<void> {
    return this.hooks.scrubFinished(nowMs, this.config.outbox.scrub_after_days).then(
      (rows) => {
        if (rows > 0)
          this.log.info({ event: 'outbox.scrubbed', rows }, `scrubbed personal fields of ${rows} rows`);
      },
      (err: unknown) => {
        this.log.error(
          { event: 'outbox.scrub.error', err },
          `could not scrub finished rows: ${errorMessage(err)}`,
        );
      },
    );
  }

  /** Resolves once the run going on now, if any, is over. */
  async settled(): Promise<void> {
    await this.running;
  }
}
