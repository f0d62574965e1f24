import { type Clock, cancellableSleep, isoAt } from '../common/clock.js';
import { errorMessage } from '../common/errors.js';
import { FailureStreak } from '../common/failureStreak.js';
import { newLeaseOwner } from '../common/leaseOwner.js';
import { WakeableSleep } from '../common/wakeableSleep.js';
import type { AppContext, Component } from '../context.js';
import type { ChangeSignal } from '../db/changeSignal.js';
import type { DeliveriesStore, DeliveryRun } from './deliveriesStore.js';
import { type DeliveryPolicy, decideDelivery } from './nextStep.js';
import type { DeliveryRow, DeliveryStep, SettledDelivery } from './queries.js';
import { SubscriberSender } from './send.js';
import { type Subscriber, subscribersFromConfig } from './subscribers.js';

/** What the subscriber dispatcher needs from the daemon. */
export type SubscriberDispatcherContext = Pick<AppContext, 'config' | 'clock' | 'log' | 'metrics'>;

/** Options; everything else comes from `config.subscriber_delivery`. */
export interface SubscriberDispatcherOptions {
  clock?: Clock;
  random?: () => number;
  /** This process's lease owner (one per process: the outbox's claims and the liveness lock use it too). */
  owner?: string;
  /** Rows claimed at once per subscriber, sent one after another (default: 64). */
  batch?: number;
  /** Where the deliveries are: the store's (src/app/ builds it). */
  store: DeliveriesStore;
  /**
   * Wakes the lanes when it announces: on PostgreSQL other processes write deliveries, each in a
   * transaction that appends to the change feed, whose LISTEN/NOTIFY feeds this signal
   * (postgres/changeListener.ts). Without it (or between announcements) the lanes poll as ever.
   */
  wakeOn?: ChangeSignal;
  /**
   * Whether claiming is safe now, the daemon's liveness (app/liveness.ts; default: always): a
   * PostgreSQL replica that lost its liveness lock is presumed dead by the others, who may hand its claims back, so it claims nothing until
   * it holds the lock again.
   */
  mayClaim?: () => boolean;
}

/**
 * Pushes deliveries to subscribers: one lane per subscriber, each sending its rows strictly in id
 * order, one at a time, so a subscriber that is down or slow holds up only itself. A lane claims a
 * run of rows in one commit (leased), sends them in turn, and submits the run's settle to the
 * store without waiting for it (the next claim runs behind it), so a fast subscriber costs about
 * one commit per batch, not two per event. At-least-once: a crash before a settle commits sends
 * the row again, with the same webhook-id. The store is SQLite's (the group commit) or, with
 * several replicas on one database, PostgreSQL's, whose claim keeps the order across them (queries.ts).
 */
export class SubscriberDispatcher {
  private readonly lanes: Lane[];
  private readonly sender: SubscriberSender;
  private readonly store: DeliveriesStore;
  private unlisten: (() => void) | undefined;

  constructor(ctx: SubscriberDispatcherContext, options: SubscriberDispatcherOptions) {
    const c = ctx.config.subscriber_delivery;
    this.sender = new SubscriberSender({ timeoutMs: c.timeout_ms, connectTimeoutMs: c.connect_timeout_ms });
    this.store = options.store;
    this.wakeOn = options.wakeOn;
    const shared: LaneShared = {
      ctx,
      clock: options.clock ?? ctx.clock,
      random: options.random ?? Math.random,
      owner: options.owner ?? newLeaseOwner(),
      batch: options.batch ?? 64,
      mayClaim: options.mayClaim ?? (() => true),
      store: this.store,
      sender: this.sender,
      policy: {
        baseMs: c.backoff_base_ms,
        capMs: c.backoff_cap_ms,
        maxAttempts: c.max_attempts,
        maxAgeMs: c.max_age_hours * 3_600_000,
      },
    };
    this.lanes = subscribersFromConfig(ctx.config).map((sub) => new Lane(shared, sub));
  }

  private readonly wakeOn: ChangeSignal | undefined;

  start(): void {
    this.store.onEnqueued(() => this.wake());
    this.unlisten ??= this.wakeOn?.listen(() => this.wake());
    for (const lane of this.lanes) lane.start();
  }

  /** Stops every lane: the request in flight is cancelled, unsent claimed rows go back to pending. */
  async stop(): Promise<void> {
    this.store.onEnqueued(undefined);
    this.unlisten?.();
    this.unlisten = undefined;
    await Promise.all(this.lanes.map((lane) => lane.stop()));
    this.sender.close();
  }

  /** Looks for new deliveries now. */
  wake(): void {
    for (const lane of this.lanes) lane.wake();
  }
}

interface LaneShared {
  ctx: SubscriberDispatcherContext;
  clock: Clock;
  random: () => number;
  owner: string;
  batch: number;
  mayClaim: () => boolean;
  store: DeliveriesStore;
  sender: SubscriberSender;
  policy: DeliveryPolicy;
}

class Lane {
  private stopping = false;
  private running: Promise<void> | undefined;
  private readonly idle = new WakeableSleep();
  private cancel = new AbortController();
  private readonly writes = new Set<Promise<unknown>>();
  /** The loop's store failures in a row: backoff, and one log line per run of them. */
  private readonly storeFailures: FailureStreak;

  constructor(
    private readonly s: LaneShared,
    private readonly sub: Subscriber,
  ) {
    this.storeFailures = new FailureStreak(s.ctx.config.subscriber_delivery.poll_ms, s.random);
  }

  start(): void {
    if (this.running) return;
    this.stopping = false;
    this.cancel = new AbortController();
    this.running = this.loop();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.cancel.abort();
    this.idle.wake();
    await this.running;
    this.running = undefined;
  }

  wake(): void {
    this.idle.wake();
  }

  private async loop(): Promise<void> {
    const { ctx } = this.s;
    while (!this.stopping) {
      let delay = ctx.config.subscriber_delivery.poll_ms;
      if (!this.s.mayClaim()) {
        // Presumed dead by the other replicas until the liveness lock is back: wait, claim nothing.
        await this.idle.sleep(delay, this.stopping);
        continue;
      }
      try {
        const rows = await this.s.store.claim(() => {
          const now = this.s.clock.now();
          return {
            subscriber: this.sub.key,
            owner: this.s.owner,
            now: isoAt(now),
            leaseUntil: isoAt(now + ctx.config.subscriber_delivery.lease_seconds * 1000),
            limit: this.s.batch,
          };
        });
        const failed = this.storeFailures.succeeded();
        if (failed > 0)
          ctx.log.info(
            { event: 'subscribers.loop.recovered', subscriber: this.sub.key, failedTries: failed },
            `subscriber ${this.sub.key}: the store works again after ${failed} failed tries`,
          );
        if (rows.length > 0) {
          await this.sendInOrder(rows);
          continue;
        }
        delay = await this.idleDelay(delay);
      } catch (err) {
        // A locked, busy or unreachable database: try again after a backoff, one log line a run.
        const step = this.storeFailures.failed();
        delay = step.delayMs;
        ctx.log[step.first ? 'error' : 'debug'](
          { event: 'subscribers.loop.error', subscriber: this.sub.key, err },
          `subscriber ${this.sub.key}: ${errorMessage(err)}`,
        );
      }
      await this.idle.sleep(delay, this.stopping);
    }
    await Promise.allSettled([...this.writes]);
  }

  private async idleDelay(poll: number): Promise<number> {
    const due = await this.s.store.nextDue(this.sub.key);
    return due ? Math.max(0, Math.min(poll, Date.parse(due) - this.s.clock.now())) : poll;
  }

  /**
   * Sends claimed rows in order; on a failure to retry, the rest go back unsent, behind it. The
   * outcomes are recorded together in one write when the run ends (one commit per run rather than
   * one fsync per event): a kill before it sends those rows again, with the same webhook-id.
   */
  private async sendInOrder(rows: readonly DeliveryRow[]): Promise<void> {
    const settled: SettledDelivery[] = [];
    let sent = 0;
    for (const row of rows) {
      if (this.stopping) break;
      // Signed with the wall clock: the receiver checks webhook-timestamp against its own.
      const outcome = await this.s.sender.send(
        this.sub,
        { webhookId: row.webhook_id, body: row.body },
        Date.now(),
        this.cancel.signal,
      );
      if (this.cancel.signal.aborted) break;
      const now = this.s.clock.now();
      const step = decideDelivery(
        outcome,
        { attempts: row.attempts, ageFromMs: Date.parse(row.redriven_at ?? row.created_at) },
        this.s.policy,
        now,
        this.s.random,
      );
      this.record(row, step);
      settled.push({ id: row.id, now: isoAt(now), step });
      sent += 1;
      if (step.to === 'pending') break;
    }
    const leases = rows.map((row) => Date.parse(row.lease_until ?? '')).filter(Number.isFinite);
    this.write(
      {
        subscriber: this.sub.key,
        owner: this.s.owner,
        settled,
        unsent: rows.slice(sent).map((row) => row.id),
        now: isoAt(this.s.clock.now()),
      },
      leases.length > 0 ? Math.min(...leases) : this.s.clock.now(),
    );
  }

  /**
   * Submits a run's settle without waiting (the store runs the next claim after it). A failed one
   * (the database away for a moment) is tried again with backoff while the run's lease lasts, each
   * try guarded by the lease owner; given up, the lease runs out and the rows are sent again.
   */
  private write(run: DeliveryRun, leaseEnd: number): void {
    const retries = new FailureStreak(this.s.ctx.config.subscriber_delivery.poll_ms, this.s.random);
    const attempt = async (): Promise<void> => {
      for (;;) {
        try {
          return await this.s.store.settle(run);
        } catch (err) {
          const step = retries.failed();
          if (this.stopping || this.s.clock.now() + step.delayMs >= leaseEnd) throw err;
          await cancellableSleep(step.delayMs, this.cancel.signal);
        }
      }
    };
    const done = attempt().catch((err: unknown) => {
      this.s.ctx.log.error(
        { event: 'subscribers.settle.error', subscriber: this.sub.key, err },
        `subscriber ${this.sub.key}: could not record a delivery: ${errorMessage(err)}`,
      );
    });
    this.writes.add(done);
    void done.finally(() => this.writes.delete(done));
  }

  private record(row: DeliveryRow, step: DeliveryStep): void {
    const { ctx } = this.s;
    const outcome = step.to === 'delivered' ? 'delivered' : step.to === 'dead' ? 'dead' : 'retry';
    ctx.metrics.subscriberDeliveries.inc({ subscriber: this.sub.key, outcome });
    if (step.to === 'delivered') return;
    const fields = {
      subscriber: this.sub.key,
      id: row.id,
      type: row.event_type,
      attempts: row.attempts,
      status: step.status,
      error: step.error,
    };
    if (step.to === 'dead')
      ctx.log.error(
        { event: 'subscribers.dead', ...fields },
        `delivery ${row.id} to ${this.sub.key} is dead: ${step.error}`,
      );
    else
      ctx.log.warn(
        { event: 'subscribers.retry', ...fields, next: step.nextAttemptAt },
        `delivery ${row.id} to ${this.sub.key} failed (${step.error}); next attempt at ${step.nextAttemptAt}`,
      );
  }
}

/** The subscriber dispatcher as a daemon component (no lanes, nothing to do, without subscribers). */
export function createSubscriberComponent(
  ctx: SubscriberDispatcherContext,
  options: SubscriberDispatcherOptions,
): Component & { dispatcher: SubscriberDispatcher } {
  const dispatcher = new SubscriberDispatcher(ctx, options);
  return {
    name: 'subscribers',
    dispatcher,
    async start() {
      dispatcher.start();
    },
    async stop() {
      await dispatcher.stop();
    },
  };
}
