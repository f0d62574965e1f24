import type pg from 'pg';
import { type BackoffPolicy, backoffDelayMs } from '../common/backoff.js';
import { type Clock, isoAt, systemClock } from '../common/clock.js';
import { errorMessage } from '../common/errors.js';
import type { Logger } from '../common/log.js';
import type { PgAvailability } from './availability.js';
import { holdLiveness, type ReplicaInfo, type ReplicaLiveness, releaseDeadPg } from './liveness.js';

/**
 * A replica's presence on PostgreSQL, for as long as the daemon runs: it holds its liveness lock
 * (liveness.ts), stamps its heartbeat, and sweeps for dead replicas so their claims come back
 * within a sweep (seconds) instead of after their leases. A liveness connection that breaks is
 * re-taken with backoff; meanwhile the others presume this replica dead and may hand its claims
 * back, so `alive()` says whether claiming is safe. It is PostgreSQL's side of the daemon's
 * liveness port (src/app/liveness.ts, which this layer does not import: the shape matches).
 */

/** How presence waits; the default is real timers, tests fire them by hand. */
export interface PresenceTimers {
  /** Runs `work` once after `ms`; returns what cancels it. */
  after(ms: number, work: () => Promise<void>): () => void;
}

/** setTimeout, unref'd: presence alone keeps no process alive. */
export const realTimers: PresenceTimers = {
  after(ms, work) {
    const timer = setTimeout(() => void work(), ms);
    timer.unref();
    return () => clearTimeout(timer);
  },
};

/** Heartbeat period (ms): status calls a heartbeat stale after REPLICA_STALE_MS (2 min), several beats. */
export const HEARTBEAT_MS = 15_000;
/** Sweep period (ms): how long at most a dead replica's claims wait once its session is gone. */
export const SWEEP_MS = 2_000;
/** Spacing of attempts to re-take a lost liveness lock. */
export const RETAKE_BACKOFF: BackoffPolicy = { baseMs: 1_000, capMs: 30_000 };

/** What {@link replicaPresence} needs. */
export interface PresenceDeps {
  pool: pg.Pool;
  /** Who this replica is (its `replicas` row); `now` is its start. */
  replica: ReplicaInfo;
  log: Logger;
  /**
   * Hands back everything a dead `owner` holds (its outbox rows and its subscriber deliveries);
   * returns how many came back. Called under that owner's liveness lock, one owner at a time.
   */
  releaseOwner(owner: string, nowIso: string): Promise<number>;
  /**
   * Settles what dead replicas left that no owner names, e.g. sync runs still marked running with
   * their lock free; returns how many (default: nothing). Called after each sweep's releases.
   */
  settleOrphans?: (nowIso: string) => Promise<number>;
  /** Heartbeat period, ms (default: {@link HEARTBEAT_MS}). */
  heartbeatMs?: number;
  /** Sweep period, ms (default: {@link SWEEP_MS}). */
  sweepMs?: number;
  /** Spacing of re-take attempts (default: {@link RETAKE_BACKOFF}). */
  retakeBackoff?: BackoffPolicy;
  /** Where heartbeat and release times come from (default: the system clock). */
  clock?: Clock;
  /** How periods and backoff wait (default: {@link realTimers}). */
  timers?: PresenceTimers;
  /** Jitter source of the re-take backoff (default: Math.random). */
  random?: () => number;
  /** Told of each attempt to open the liveness session (default: none). */
  availability?: PgAvailability;
}

/** A replica's presence: the daemon's liveness on PostgreSQL. */
export interface ReplicaPresence {
  /** Its name as a daemon component. */
  readonly name: string;
  readonly owner: string;
  /**
   * Takes the liveness lock (fails if it cannot: the database is unreachable, or another live
   * process holds this lease owner), runs a first sweep so dead replicas' claims are back before
   * this one claims, then heartbeats and sweeps on their periods until `stop()`.
   */
  start(): Promise<void>;
  /** Nothing to do once the daemon is up: the `replicas` row was written as the lock was taken. */
  ready(): void;
  /** Calls `fn` with the count whenever a sweep handed claims back, e.g. to wake the dispatchers. */
  onHandBack(fn: (count: number) => void): void;
  /** Whether this replica holds its liveness lock now (false before start, while it is re-taken, and after stop). */
  alive(): boolean;
  /** The backend pid of the liveness session, null while none is held. */
  pid(): number | null;
  /** One sweep now (as the timer does); returns how many claims came back. */
  sweep(): Promise<number>;
  /** Stops the timers, waits for work in flight, then drops the lock and the `replicas` row. */
  stop(): Promise<void>;
}

/** A replica's presence, not started yet. */
export function replicaPresence(deps: PresenceDeps): ReplicaPresence {
  return new Presence(deps);
}

class Presence implements ReplicaPresence {
  readonly name = 'liveness';
  readonly owner: string;
  private readonly handBack: Array<(count: number) => void> = [];
  private readonly clock: Clock;
  private readonly timers: PresenceTimers;
  private liveness: ReplicaLiveness | null = null;
  private stopping = false;
  private readonly pending = new Set<() => void>();
  private readonly running = new Set<Promise<void>>();
  private sweeps: Promise<unknown> = Promise.resolve();
  private sweepFailing = false;
  private retakeFailures = 0;
  /** Cancels the re-take waiting on its backoff (null when none waits). */
  private retakeWaiting: (() => void) | null = null;

  constructor(private readonly deps: PresenceDeps) {
    this.owner = deps.replica.owner;
    this.clock = deps.clock ?? systemClock;
    this.timers = deps.timers ?? realTimers;
  }

  async start(): Promise<void> {
    // The database back after an outage: the lock is re-taken now, not at the backoff's next try
    // (up to 30 s later), since this replica claims nothing until it holds it.
    this.deps.availability?.onChange((change) => {
      if (change.kind === 'reachable') this.retakeNow();
    });
    await this.hold();
    await this.sweep();
    this.every(this.deps.heartbeatMs ?? HEARTBEAT_MS, () => this.heartbeat());
    this.every(this.deps.sweepMs ?? SWEEP_MS, async () => {
      await this.sweep();
    });
  }

  ready(): void {}

  onHandBack(fn: (count: number) => void): void {
    this.handBack.push(fn);
  }

  alive(): boolean {
    return this.liveness !== null;
  }

  pid(): number | null {
    return this.liveness?.pid ?? null;
  }

  /** Sweeps run one at a time (the timer's and a caller's). */
  sweep(): Promise<number> {
    const run = this.sweeps.then(() => this.sweepOnce());
    this.sweeps = run;
    return run;
  }

  async stop(): Promise<void> {
    this.stopping = true;
    for (const cancel of this.pending) cancel();
    this.pending.clear();
    await Promise.allSettled([...this.running, this.sweeps]);
    const held = this.liveness;
    this.liveness = null;
    if (held) {
      await held.close();
      return;
    }
    // Lost and not re-taken: the row may outlive the session if no other replica swept it yet.
    await this.deps.pool
      .query('DELETE FROM replicas WHERE lease_owner = $1', [this.owner])
      .catch((err: unknown) =>
        this.deps.log.warn(
          { event: 'replica.stop.error', owner: this.owner, err },
          `could not remove this replica's row: ${errorMessage(err)}`,
        ),
      );
  }

  private async hold(): Promise<void> {
    // The session is known only once held; a break before then fails holdLiveness itself.
    let held: ReplicaLiveness | undefined;
    held = await holdLiveness(
      this.deps.pool,
      this.deps.replica,
      (err) => {
        if (held) this.lost(held, err);
      },
      this.deps.availability,
    );
    this.liveness = held;
  }

  /** Runs `work` every `ms` (after each run ends, so runs never overlap) until stop. */
  private every(ms: number, work: () => Promise<void>): void {
    this.later(ms, async () => {
      await work();
      this.every(ms, work);
    });
  }

  /**
   * Runs `work` once after `ms` unless stopped; stop waits for it. `work` must not throw. Returns
   * what cancels it.
   */
  private later(ms: number, work: () => Promise<void>): () => void {
    if (this.stopping) return () => {};
    const cancel = this.timers.after(ms, () => {
      this.pending.delete(cancel);
      if (this.stopping) return Promise.resolve();
      const run = work();
      this.running.add(run);
      return run.finally(() => this.running.delete(run));
    });
    this.pending.add(cancel);
    return () => {
      cancel();
      this.pending.delete(cancel);
    };
  }

  private async heartbeat(): Promise<void> {
    const held = this.liveness;
    if (!held) return;
    try {
      await held.heartbeat(isoAt(this.clock.now()));
    } catch (err) {
      // It goes through the liveness session: failing, that session is as good as gone.
      this.lost(held, err instanceof Error ? err : new Error(String(err)));
    }
  }

  /** The session `held` broke: presumed dead by the others from now on; re-take it. Once per session. */
  private lost(held: ReplicaLiveness, err: Error): void {
    if (this.liveness !== held) return;
    this.liveness = null;
    this.deps.log.error(
      { event: 'replica.liveness.lost', owner: this.owner, err },
      `lost the liveness session (${errorMessage(err)}): other replicas may hand this one's claims back; re-taking it`,
    );
    // Ends it for sure: a session still open server-side would hold the lock for a replica that
    // believes it has none.
    void held.close().catch(() => {});
    this.retakeLater();
  }

  private retakeLater(): void {
    this.retakeFailures += 1;
    const delay = backoffDelayMs(
      this.retakeFailures,
      this.deps.retakeBackoff ?? RETAKE_BACKOFF,
      this.deps.random ?? Math.random,
    );
    this.retakeWaiting = this.later(delay, () => this.retake());
  }

  /** A re-take waiting on its backoff goes now instead. */
  private retakeNow(): void {
    const waiting = this.retakeWaiting;
    if (!waiting || this.liveness || this.stopping) return;
    waiting();
    this.retakeWaiting = this.later(0, () => this.retake());
  }

  private async retake(): Promise<void> {
    this.retakeWaiting = null;
    try {
      await this.hold();
    } catch (err) {
      // Once per outage at warn (the database may be away for a while), then at debug.
      this.deps.log[this.retakeFailures === 1 ? 'warn' : 'debug'](
        { event: 'replica.liveness.retake_failed', owner: this.owner, attempt: this.retakeFailures, err },
        `could not re-take the liveness lock: ${errorMessage(err)}`,
      );
      this.retakeLater();
      return;
    }
    if (this.stopping) return; // stop() waits for this run, then closes the session
    // holdLiveness stamped the start as heartbeat: a replica that ran for hours would look stale.
    await this.heartbeat();
    this.deps.log.info(
      { event: 'replica.liveness.retaken', owner: this.owner, attempts: this.retakeFailures },
      'liveness lock re-taken: this replica is alive again',
    );
    this.retakeFailures = 0;
  }

  /** One sweep: each dead owner's work back through the caller's `releaseOwner`. Never throws. */
  private async sweepOnce(): Promise<number> {
    const { pool, log } = this.deps;
    let released: Array<{ owner: string; count: number }>;
    try {
      released = await releaseDeadPg(pool, this.owner, async (owner) => ({
        owner,
        count: await this.deps.releaseOwner(owner, isoAt(this.clock.now())),
      }));
      await this.deps.settleOrphans?.(isoAt(this.clock.now()));
    } catch (err) {
      // Logged once per outage, not every sweep (the database may be down for a while).
      if (!this.sweepFailing)
        log.error(
          { event: 'replica.sweep.error', err },
          `sweep for dead replicas failed: ${errorMessage(err)}`,
        );
      this.sweepFailing = true;
      return 0;
    }
    if (this.sweepFailing)
      log.info({ event: 'replica.sweep.recovered' }, 'sweep for dead replicas works again');
    this.sweepFailing = false;
    const count = released.reduce((n, r) => n + r.count, 0);
    const dead = released.map((r) => r.owner);
    if (dead.length > 0)
      log.warn(
        { event: 'replica.released', owners: dead, count },
        `handed back ${count} claim(s) of ${dead.length} dead replica(s): ${dead.join(', ')}`,
      );
    if (count > 0) for (const fn of this.handBack) fn(count);
    return count;
  }
}
