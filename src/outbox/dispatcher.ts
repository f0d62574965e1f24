import { type Clock, finishedWithin, isoAt } from '../common/clock.js';
import { errorMessage } from '../common/errors.js';
import { FailureStreak } from '../common/failureStreak.js';
import { newLeaseOwner } from '../common/leaseOwner.js';
import { WakeableSleep } from '../common/wakeableSleep.js';
import type { Component } from '../context.js';
import { maskReceived } from '../operations/personal.js';
import type { OperationRow } from '../operations/rows.js';
import type { ClaimParams, OperationsStore } from '../operations/storeSeam.js';
import { errorForNetwork, OperatorError } from '../operator/operatorErrors.js';
import { AuthPause } from './authPause.js';
import { type ClaimAhead, claimAheadFor } from './claimAhead.js';
import type { DispatcherContext, DispatcherOptions } from './dispatcherOptions.js';
import { type OutboxHooks, ScrubSchedule } from './hooks.js';
import { idleDelayMs } from './idleDelay.js';
import type { AttemptOutcome, RetryPolicy } from './nextStep.js';
import { OwedSettles } from './owedSettles.js';
import type { OutboxPause } from './pause.js';
import { maskerFor, planSettle, settleDurably } from './settle.js';
import { afterSettle, inboxEffects, logSettleError, releaseRow } from './settleEffects.js';

/**
 * Sends queued notifications to the operator's /notify. Rows are claimed by one UPDATE ...
 * RETURNING with a lease (so two dispatchers, or a restart after a crash, never lose a row), up to
 * `outbox.concurrency` at once, never ahead of an older unsettled row with the same order key.
 */
export class Dispatcher {
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly owner: string;
  private readonly policy: RetryPolicy;
  /**
   * On SQLite, claims and settles join the connection's group commit (shared with API enqueues and
   * webhooks): with synchronous=full each commit is an fsync, so one per turn rather than one per
   * write. A settle, its inbox effects and its refill claim are submitted in one turn to share it.
   */
  private readonly store: OperationsStore;
  private readonly hooks: OutboxHooks | null;
  private readonly scrubs: ScrubSchedule | null;
  /**
   * The sends in flight: each holds one of `outbox.concurrency` slots until its settle's first try,
   * or, claiming ahead, until its answer.
   */
  private readonly inflight = new Set<Promise<void>>();
  /**
   * Rows claimed ahead of the free slots (options.claimAhead), or null. With it a slot frees when
   * its request is answered, and the settle goes on beside the next send ({@link settling}).
   */
  private readonly ahead: ClaimAhead | null;
  /** Settles of answered sends whose slot is free already (claim-ahead only); a stop waits for them. */
  private readonly settling = new Set<Promise<void>>();
  private readonly owed: OwedSettles;
  private running: Promise<void> | undefined;
  private stopping = false;
  private cancel = new AbortController();
  private readonly idle = new WakeableSleep();
  private readonly pause: AuthPause;
  /** The loop's store failures in a row: backoff, and one log line per run of them. */
  private readonly storeFailures: FailureStreak;

  constructor(
    private readonly ctx: DispatcherContext,
    private readonly options: DispatcherOptions,
  ) {
    const c = ctx.config.outbox;
    this.clock = options.clock ?? ctx.clock;
    this.random = options.random ?? Math.random;
    this.owner = options.owner ?? newLeaseOwner();
    this.policy = {
      baseMs: c.backoff_base_ms,
      capMs: c.backoff_cap_ms,
      maxAttempts: c.max_attempts,
      maxAgeMs: c.max_age_hours * 3_600_000,
    };
    this.store = options.store;
    this.hooks = options.hooks;
    this.scrubs = this.hooks && new ScrubSchedule(this.hooks, ctx.log, ctx.config, options);
    this.pause = new AuthPause(ctx.log, this.hooks?.pause ?? null, this.policy, this.random);
    this.storeFailures = new FailureStreak(c.poll_ms, this.random);
    this.owed = new OwedSettles(ctx.log);
    this.ahead = claimAheadFor(ctx.config, options.claimAhead ?? 0, {
      claim: (limit) => this.store.claim(() => this.claimParams(this.clock.now(), limit())),
      heldElsewhere: () => this.inflight.size,
      now: () => this.clock.now(),
      wake: () => {
        this.options.onCommitted?.();
        this.wake();
      },
      failed: (err) =>
        this.ctx.log.debug({ event: 'outbox.ahead.error', err }, `dispatcher: ${errorMessage(err)}`),
    });
  }

  /** Starts the loop (idempotent). A pause left by an earlier process is picked up and probed at once. */
  start(): void {
    if (this.running) return;
    this.stopping = false;
    this.cancel = new AbortController();
    this.running = this.loop();
  }

  /**
   * Stops claiming, then lets the attempts in flight settle for up to `stopGraceMs`; any still
   * running are cancelled and their rows released (queued again, lease cleared, attempt not
   * counted), so a stop leaves no row held by a lease that only its expiry would free.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    const running = this.running;
    if (running && !(await finishedWithin(running, this.options.stopGraceMs ?? 10_000))) {
      this.ctx.log.warn(
        { event: 'outbox.stop.cancelling', inflight: this.inflight.size },
        `cancelling ${this.inflight.size} notification(s) still in flight; their rows go back to the queue`,
      );
      this.cancel.abort();
      await running;
    }
    this.running = undefined;
  }

  /** Looks for due rows now instead of at the next poll. */
  wake(): void {
    this.idle.wake();
  }

  /**
   * The store is back (PostgreSQL reachable again, or a claim went through after failures): settles
   * owed since the outage try now rather than at their backoff's next step (up to 5 s away), as each
   * holds its unit's next operation back while its row is `sending`; and the loop claims at once.
   */
  retryOwedNow(): void {
    this.owed.retryNow();
    this.wake();
  }

  /** Whether sending is paused by an auth failure. */
  get paused(): OutboxPause | null {
    return this.pause.state;
  }

  private async loop(): Promise<void> {
    await this.pause.restore(this.clock.now());
    while (!this.stopping) {
      let delay = this.ctx.config.outbox.poll_ms;
      if (this.options.mayClaim?.() === false) {
        // Presumed dead by the other replicas until the liveness lock is back: wait, claim nothing,
        // and send nothing claimed ahead (the others may hand those rows back and send them).
        await this.releaseAhead('liveness');
        await this.idle.sleep(delay, this.stopping);
        continue;
      }
      try {
        this.scrubs?.maybe(this.clock.now());
        const pausedAtClaim = this.pause.state !== null;
        const claimed = await this.claim();
        this.storeWorks();
        if (this.stopping) {
          // A stop arrived while the claim was committing: hand the rows back unsent.
          await Promise.all(claimed.map((row) => this.release(row, 'stop')));
          break;
        }
        if (this.pause.state && !pausedAtClaim) {
          // A refusal paused sending while the claim was committing: these rows were claimed as
          // ordinary sends, not as the one probe, so they go back unsent.
          await Promise.all(claimed.map((row) => this.release(row, 'pause')));
          continue;
        }
        for (const row of claimed) this.track(this.send(row));
        // Claiming ahead: the next claim waits for a group now that these count as in flight.
        if (claimed.length > 0) this.ahead?.topUp();
        if (
          claimed.length > 0 &&
          this.inflight.size < this.ctx.config.outbox.concurrency &&
          !this.pause.state
        )
          continue;
        delay = await this.idleDelay(claimed.length === 0);
      } catch (err) {
        // A locked, busy or unreachable database: try again after a backoff rather than die.
        const step = this.storeFailures.failed();
        delay = step.delayMs;
        this.ctx.log[step.first ? 'error' : 'debug'](
          { event: 'outbox.loop.error', err },
          `dispatcher: ${errorMessage(err)}; trying again with backoff`,
        );
      }
      await this.idle.sleep(delay, this.stopping);
    }
    await this.releaseAhead('stop');
    // Owed settles too: a stop leaves no answered row unrecorded that its lease could still record.
    while (this.inflight.size > 0 || this.owed.size > 0 || this.settling.size > 0)
      await Promise.allSettled([...this.inflight, ...this.owed.all(), ...this.settling]);
    await this.scrubs?.settled();
    await this.pause.recorded();
  }

  /** Settles still being retried in the background (their sends are done). */
  get owedSettles(): number {
    return this.owed.size;
  }

  /** A claim went through: a run of store failures, if any, is over. */
  private storeWorks(): void {
    const failed = this.storeFailures.succeeded();
    if (failed === 0) return;
    this.retryOwedNow();
    this.ctx.log.info(
      { event: 'outbox.loop.recovered', failedTries: failed },
      `dispatcher: the store works again after ${failed} failed tries; claiming`,
    );
  }

  private track(task: Promise<void>): void {
    this.inflight.add(task);
    void task.finally(() => {
      this.inflight.delete(task);
      this.wake();
    });
  }

  private async claim(): Promise<OperationRow[]> {
    const free = this.ctx.config.outbox.concurrency - this.inflight.size;
    if (free <= 0) return [];
    const now = this.clock.now();
    let limit = free;
    if (this.pause.state) {
      // Paused: rows claimed ahead go back; one probe at a time, after a backoff, to learn whether
      // the key works again.
      await this.releaseAhead('pause');
      if (this.inflight.size > 0 || now < this.pause.probeAtMs) return [];
      limit = 1;
    } else if (this.ahead) {
      const { rows, stale } = await this.ahead.take(free);
      // Leases too short now to cover a request: queued again for a claim with a fresh lease.
      await Promise.all(stale.map((row) => this.release(row, 'lease')));
      return rows.sort((a, b) => a.id - b.id);
    }
    // Parameters taken when the claim runs: it may wait for another process's lock.
    const rows = await this.store.claim(() => this.claimParams(this.clock.now(), limit));
    if (rows.length > 0) this.options.onCommitted?.();
    return rows.sort((a, b) => a.id - b.id);
  }

  private claimParams(now: number, limit: number): ClaimParams {
    return {
      owner: this.owner,
      now: isoAt(now),
      leaseUntil: isoAt(now + this.ctx.config.outbox.lease_seconds * 1000),
      limit,
    };
  }

  /**
   * Claims the next row for the slot a settling row frees, in the same group commit as the settle
   * (one fsync for both instead of a settle commit, a wake-up and a claim commit).
   */
  private refill(): Promise<OperationRow[]> {
    if (this.options.mayClaim?.() === false) return Promise.resolve([]);
    return this.store
      .claim(() => this.claimParams(this.clock.now(), 1))
      .catch((err: unknown) => {
        // The loop claims at its next wake-up instead.
        this.ctx.log.warn({ event: 'outbox.refill.error', err }, `dispatcher: ${errorMessage(err)}`);
        return [];
      });
  }

  /** Hands the rows claimed ahead back (waiting for claims still running to bring theirs). */
  private async releaseAhead(cause: 'stop' | 'pause' | 'liveness'): Promise<void> {
    if (!this.ahead) return;
    if (cause === 'stop') await this.ahead.settled();
    const why = cause === 'stop' ? 'unsent' : cause;
    await Promise.all(this.ahead.drain().map((row) => this.release(row, why)));
  }

  /** Sends the refilled rows, or hands them back when a stop came meanwhile; resolves once those are back. */
  private async startRefilled(rows: readonly OperationRow[]): Promise<void> {
    const released: Promise<void>[] = [];
    for (const row of rows) {
      // Claimed unpaused: a pause that began since then holds them back as it does the rest.
      if (this.stopping || this.pause.state)
        released.push(this.release(row, this.stopping ? 'stop' : 'pause'));
      else this.track(this.send(row));
    }
    await Promise.all(released);
  }

  /** How long to sleep when nothing more can be claimed (./idleDelay.ts). */
  private idleDelay(claimedNothing: boolean): Promise<number> {
    const { poll_ms: pollMs, concurrency } = this.ctx.config.outbox;
    const probeAtMs = this.pause.state ? this.pause.probeAtMs : null;
    const full = this.inflight.size >= concurrency;
    const view = { pollMs, nowMs: this.clock.now(), probeAtMs, full, claimedNothing };
    return idleDelayMs(view, () => this.store.nextDueAt());
  }

  /** One attempt: POST the stored body as it is, then settle the row in one transaction. */
  private async send(row: OperationRow): Promise<void> {
    const startedMs = this.clock.now();
    const t0 = performance.now();
    let outcome: AttemptOutcome;
    try {
      const client = this.ctx.operator();
      const mask = maskerFor(row);
      const result = await client.notify(this.ctx.config.operator.notify_path, row.body, {
        signal: this.cancel.signal,
        maskBody: (text) => maskReceived(text, mask),
      });
      outcome = { kind: 'answered', status: result.status, body: result.body };
    } catch (err) {
      if (this.cancel.signal.aborted) {
        await this.release(row, 'stop');
        return;
      }
      outcome = { kind: 'error', error: err instanceof OperatorError ? err : errorForNetwork(err) };
    }
    const durationMs = Math.round(performance.now() - t0);
    const status = outcome.kind === 'answered' ? outcome.status : outcome.error.status;
    this.ctx.metrics.notifyRequests.inc({ code: status === undefined ? 'error' : String(status) });
    const settled = this.settle(row, outcome, startedMs, durationMs).catch((err: unknown) =>
      logSettleError(this.ctx.log, row, err),
    );
    if (!this.ahead) return settled;
    // Claiming ahead: the slot frees now; the settle goes on beside the next send.
    this.settling.add(settled);
    void settled.finally(() => this.settling.delete(settled));
  }

  /** Hands a row back to the queue unsent (or with its request cancelled by a stop). */
  private release(row: OperationRow, cause: Parameters<typeof releaseRow>[2]): Promise<void> {
    const { store, owner, clock } = this;
    return releaseRow({ store, owner, clock, log: this.ctx.log }, row, cause);
  }

  private async settle(
    row: OperationRow,
    outcome: AttemptOutcome,
    startedMs: number,
    durationMs: number,
  ): Promise<void> {
    const now = this.clock.now();
    const nowIso = isoAt(now);
    const attempt = { row, outcome, owner: this.owner, nowIso, startedMs, durationMs };
    const { outcome: masked, next, request } = planSettle(attempt, this.policy, now, this.random);
    const reportStep = this.pause.apply(next, masked, now);
    // Submitted in one turn: on SQLite the settle, its inbox effects and the refill share a commit.
    let owe = (): void => {};
    const owing = new Promise<'owed'>((resolve) => {
      owe = () => resolve('owed');
    });
    const { store, clock, random, ctx } = this;
    const retry = { cancel: this.cancel.signal, retryNow: this.owed.retrySignal };
    const settling = settleDurably({ store, clock, random, ctx, ...retry }, row, request, owe);
    const inbox =
      next.state === 'accepted' ? inboxEffects(this.hooks, this.ctx.log, row, nowIso, settling) : undefined;
    // Only after a success: a failing operator gets no more traffic than the loop's own pace.
    // Claiming ahead, the claim waiting for the next group rides with this settle instead.
    const refillNow = next.state === 'accepted' && !this.pause.state && !this.stopping;
    if (this.ahead && refillNow && this.options.mayClaim?.() !== false) this.ahead.topUp();
    const refilled = refillNow && !this.ahead ? this.refill() : undefined;
    const { log, metrics } = this.ctx;
    const { requestSync, onCommitted } = this.options;
    const effects = { log, metrics, requestSync, onCommitted };
    const finished = afterSettle(effects, row, next, reportStep, settling, inbox).then(
      () => null,
      (err: unknown) => ({ err }),
    );
    // The send's slot is held until the settle's first try: when that fails (the row locked by
    // another transaction, the store away), the settle goes on in the background and the slot
    // takes the next row. Per-key order holds: a row's newer rows stay unclaimable until it settles.
    const first = await Promise.race([finished, owing]);
    if (first === 'owed') this.owed.track(row, finished);
    // Refilled rows are this dispatcher's whatever became of the settle: sent, or handed back.
    if (refilled) await this.startRefilled(await refilled);
    if (first && first !== 'owed') throw first.err;
  }
}

/** The dispatcher as a daemon component; `wake` is what enqueue and retry call (see daemon.ts). */
export function createDispatcherComponent(
  ctx: DispatcherContext,
  options: DispatcherOptions,
): Component & { dispatcher: Dispatcher; wake: () => void } {
  const dispatcher = new Dispatcher(ctx, options);
  return {
    name: 'dispatcher',
    dispatcher,
    wake: () => dispatcher.wake(),
    async start() {
      dispatcher.start();
    },
    async stop() {
      await dispatcher.stop();
    },
  };
}
