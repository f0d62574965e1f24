import { REQUEST_BUSY_GRACE_MS, type ScriptStore } from '../store/script.js';
import { onDeliveriesEnqueued } from './deliverySinks.js';
import {
  claimDeliveries,
  type DeliveryClaim,
  type DeliveryFilter,
  type DeliveryRow,
  getStatement,
  listStatement,
  nextDueStatement,
  redriveDeliveries,
  releaseDeliveries,
  retryDelivery,
  type SettledDelivery,
  settleDeliveries,
} from './queries.js';

/** What a lane records when a claimed run ends: the outcomes, and the rows it did not send. */
export interface DeliveryRun {
  subscriber: string;
  owner: string;
  settled: readonly SettledDelivery[];
  /** Claimed but not sent: back to pending, attempt not counted. */
  unsent: readonly number[];
  now: string;
}

/** A person's steering waits a moment for another process's lock, then is refused (503). */
const REQUEST_GRACE = { busyGraceMs: REQUEST_BUSY_GRACE_MS };

/**
 * The deliveries store, over either store's scripts: the lanes' claims and settles at batch
 * granularity, and the reads and steering of `/v1/deliveries` and `vcu-sync deliveries`
 * (manage.ts). Each call is one transaction (SQLite: one job of the connection's group commit;
 * PostgreSQL: one transaction over a pool). The states and guards are queries.ts's.
 *
 * A claim runs after every settle submitted before it through the same store, so a lane may
 * submit a run's settle without waiting and claim the next run at once, and never finds its own
 * rows still held by itself.
 */
export class DeliveriesStore {
  /** Settles not yet committed, where a claim must wait for them (see {@link claim}). */
  private readonly settling = new Set<Promise<unknown>>();

  constructor(private readonly store: ScriptStore) {}

  /**
   * Claims the subscriber's oldest unsettled rows, in id order, leased to `owner`, stopping at the
   * first that may not be sent now, and never ahead of an older unsettled row of the subscriber
   * (whoever holds it). Given a function, the parameters are taken when the claim runs.
   *
   * Alone on its store (SQLite), transactions run first in, first out in the group commit, so a
   * claim is behind the settles before it without waiting (and joins their commit). Shared, they
   * run side by side over a pool: the claim waits for this store's settles to commit first.
   */
  async claim(given: DeliveryClaim | (() => DeliveryClaim)): Promise<DeliveryRow[]> {
    if (this.settling.size > 0) await Promise.allSettled([...this.settling]);
    // A generator's body runs when the store drives it: `given()` is read as the claim runs.
    return this.store.transaction(
      (function* () {
        return yield* claimDeliveries(typeof given === 'function' ? given() : given);
      })(),
    );
  }

  /** Records a run's outcomes and hands back its unsent rows, in one transaction (rows `owner` no longer holds are left). */
  settle(run: DeliveryRun): Promise<void> {
    if (run.settled.length === 0 && run.unsent.length === 0) return Promise.resolve();
    const done = this.store.transaction(settleDeliveries(run.owner, run.settled, run.unsent, run.now));
    if (this.store.dialect.capabilities.sharedByProcesses) {
      this.settling.add(done);
      void done.catch(() => {}).finally(() => this.settling.delete(done));
    }
    return done;
  }

  /** Hands back every row `owner` holds: a replica found dead (postgres/liveness.ts). */
  releaseOwner(owner: string, nowIso: string): Promise<number> {
    return this.store.transaction(releaseDeliveries(owner, nowIso));
  }

  /** When the subscriber's head row may be sent (ISO), or null when nothing waits. */
  async nextDue(subscriber: string): Promise<string | null> {
    const [head] = await this.store.read<{ at: string | null }>(nextDueStatement(subscriber));
    return head?.at ?? null;
  }

  /**
   * Calls `listener` after this process commits new deliveries, or stops (undefined). Alone on its
   * store, every writer is in this process: the sink (enqueue.ts) calls back after its
   * commit. Shared, other processes write too and the sink here calls back before its commit: the
   * dispatcher is woken by the change feed's signal instead (its `wakeOn`), so nothing here.
   */
  onEnqueued(listener: (() => void) | undefined): void {
    if (!this.store.dialect.capabilities.sharedByProcesses) onDeliveriesEnqueued(this, listener);
  }

  /** Rows in id order; a page of at most `limit`. */
  list(f: DeliveryFilter): Promise<DeliveryRow[]> {
    return this.store.read<DeliveryRow>(listStatement(f));
  }

  async get(id: number): Promise<DeliveryRow | undefined> {
    return (await this.store.read<DeliveryRow>(getStatement(id)))[0];
  }

  /**
   * A dead row back to pending (attempts reset), or a pending one made due now; undefined otherwise.
   * A person's steering: refused after a short wait for another process's lock.
   */
  retry(id: number, nowIso: string): Promise<DeliveryRow | undefined> {
    return this.store.transaction(retryDelivery(id, nowIso), REQUEST_GRACE);
  }

  /** Every dead row that died at or after `since` (of one subscriber, if named) back to pending; their ids. */
  redrive(p: { since: string; subscriber: string | null; now: string }): Promise<number[]> {
    return this.store.transaction(redriveDeliveries(p), REQUEST_GRACE);
  }
}

/** What `/v1/deliveries` and `vcu-sync deliveries` read and steer deliveries through (manage.ts). */
export type DeliveriesAccess = Pick<DeliveriesStore, 'list' | 'get' | 'retry' | 'redrive'>;
