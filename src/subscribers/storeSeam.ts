import { type CommitQueue, commitQueueFor } from '../db/commitQueue.js';
import type { Sqlite } from '../db/open.js';
import { onDeliveriesEnqueued } from './enqueue.js';
import {
  claimDeliveries,
  type DeliveryClaim,
  type DeliveryRow,
  type DeliveryStep,
  nextDeliveryDue,
  releaseAllDeliveries,
  releaseDelivery,
  releaseOwnedDeliveries,
  settleDelivery,
} from './queries.js';

/** One attempt's outcome, to record. */
export interface SettledDelivery {
  id: number;
  /** When it was decided (ISO). */
  now: string;
  step: DeliveryStep;
}

/** What a lane records when a claimed run ends: the outcomes, and the rows it did not send. */
export interface DeliveryRun {
  subscriber: string;
  owner: string;
  settled: readonly SettledDelivery[];
  /** Claimed but not sent: back to pending, attempt not counted. */
  unsent: readonly number[];
  now: string;
}

/**
 * The deliveries store at batch granularity (a claim, a run's settle), the same on both dialects:
 * each call is one transaction (SQLite: one job of the connection's group commit; PostgreSQL: one
 * transaction over a pool). The states and guards are queries.ts's on both.
 *
 * A claim runs after every settle submitted before it through the same store (SQLite: the commit
 * queue is first in, first out; PostgreSQL: the store waits for them), so a lane may submit a
 * run's settle without waiting and claim the next run at once, and never finds its own rows still
 * held by itself.
 */
export interface DeliveriesStore {
  /**
   * Claims the subscriber's oldest unsettled rows, in id order, leased to `owner`, stopping at the
   * first that may not be sent now, and never ahead of an older unsettled row of the subscriber
   * (whoever holds it). Given a function, the parameters are taken when the claim runs.
   */
  claim(params: DeliveryClaim | (() => DeliveryClaim)): Promise<DeliveryRow[]>;
  /** Records a run's outcomes and hands back its unsent rows, in one transaction (rows `owner` no longer holds are left). */
  settle(run: DeliveryRun): Promise<void>;
  /** Hands one claimed row back unsent (attempt not counted); false when `owner` does not hold it. */
  release(d: { id: number; owner: string; now: string }): Promise<boolean>;
  /** Hands back every claimed row, whoever holds it (only when every claimant is known dead). */
  releaseAll(nowIso: string): Promise<number>;
  /** Hands back every row `owner` holds: a replica found dead (operations/pgLiveness.ts). */
  releaseOwner(owner: string, nowIso: string): Promise<number>;
  /** When the subscriber's head row may be sent (ISO), or null when nothing waits. */
  nextDue(subscriber: string): Promise<string | null>;
  /**
   * Calls `listener` after this process commits new deliveries, or stops (undefined). SQLite's
   * writers are in-process; on PostgreSQL other processes write too, so the dispatcher is woken
   * by the change feed's signal instead (a no-op here).
   */
  onEnqueued(listener: (() => void) | undefined): void;
}

/** The deliveries on a SQLite file: today's statements, in the connection's group commit. */
export class SqliteDeliveriesStore implements DeliveriesStore {
  private readonly commits: CommitQueue;

  constructor(private readonly sqlite: Sqlite) {
    this.commits = commitQueueFor(sqlite);
  }

  claim(given: DeliveryClaim | (() => DeliveryClaim)): Promise<DeliveryRow[]> {
    return this.commits.submit(() =>
      claimDeliveries(this.sqlite, typeof given === 'function' ? given() : given),
    );
  }

  settle(run: DeliveryRun): Promise<void> {
    const { sqlite } = this;
    return this.commits.submit(() => {
      for (const d of run.settled) settleDelivery(sqlite, { id: d.id, owner: run.owner, now: d.now }, d.step);
      for (const id of run.unsent) releaseDelivery(sqlite, { id, owner: run.owner, now: run.now });
    });
  }

  release(d: { id: number; owner: string; now: string }): Promise<boolean> {
    return this.commits.submit(() => releaseDelivery(this.sqlite, d));
  }

  releaseAll(nowIso: string): Promise<number> {
    return this.commits.submit(() => releaseAllDeliveries(this.sqlite, nowIso));
  }

  releaseOwner(owner: string, nowIso: string): Promise<number> {
    return this.commits.submit(() => releaseOwnedDeliveries(this.sqlite, owner, nowIso));
  }

  async nextDue(subscriber: string): Promise<string | null> {
    return nextDeliveryDue(this.sqlite, subscriber);
  }

  onEnqueued(listener: (() => void) | undefined): void {
    onDeliveriesEnqueued(this.sqlite, listener);
  }
}
