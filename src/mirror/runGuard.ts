import { cancellableSleep } from '../common/clock.js';
import type { Config } from '../config/config.js';
import type { RunCounts } from './bookkeeping.js';

/** A run's bounds: idle time, overall time, records fetched. */
export interface RunBounds {
  idleMs: number;
  deadlineMs: number;
  /** Most records one run may fetch; null for no cap (custody reads one record per id). */
  maxRecords: number | null;
}

/** A run overstepped its bounds; `message` says which key and what to do. */
export class RunLimitExceeded extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RunLimitExceeded';
  }
}

/** Whatever the mirror holds, a list run may always fetch this many records. */
export const MIN_RECORD_CAP = 10_000;

/**
 * The most records one list run may fetch (pure): `max_records_factor` times the rows the mirror
 * held when it started, never below {@link MIN_RECORD_CAP}, never above `max_records`; an empty mirror
 * (a first sync) gets `max_records`.
 */
export function recordCap(liveRows: number, factor: number, absolute: number): number {
  if (liveRows === 0) return absolute;
  return Math.min(absolute, Math.max(MIN_RECORD_CAP, Math.ceil(factor * liveRows)));
}

/** The bounds of a run from the configuration; `liveRows` null for custody. */
export function runBounds(config: Config, liveRows: number | null): RunBounds {
  const s = config.sync;
  return {
    idleMs: s.idle_timeout_seconds * 1000,
    deadlineMs: s.run_deadline_seconds * 1000,
    maxRecords: liveRows === null ? null : recordCap(liveRows, s.max_records_factor, s.max_records),
  };
}

/**
 * Holds one run to its bounds. Its signal (the stop signal joined with its own) goes to the run, so
 * tripping a bound also cancels the request in flight: a trickling or endless body is dropped, not
 * left open. Idle time is the time since the last commit, not counting waits between retries (those
 * are bounded by `sync.retry_cap_ms`).
 */
export class RunGuard {
  readonly signal: AbortSignal;
  /** Why the run was stopped, once a bound tripped. */
  failure: string | null = null;
  private readonly controller = new AbortController();
  private readonly deadline: NodeJS.Timeout;
  private idle: NodeJS.Timeout | undefined;

  constructor(
    private readonly bounds: RunBounds,
    private readonly liveRows: number | null,
    stop: AbortSignal | undefined,
  ) {
    this.signal = stop ? AbortSignal.any([stop, this.controller.signal]) : this.controller.signal;
    const seconds = bounds.deadlineMs / 1000;
    this.deadline = setTimeout(
      () =>
        this.trip(
          `not finished after ${seconds} s (sync.run_deadline_seconds); the next run resumes from the checkpoint`,
        ),
      bounds.deadlineMs,
    );
    this.armIdle();
  }

  /** After each commit: the run is alive; fails it once it fetched more than its cap. */
  progress(counts: RunCounts): void {
    this.armIdle();
    const cap = this.bounds.maxRecords;
    if (cap === null || counts.fetched <= cap) return;
    const message =
      `the operator sent more than ${cap} records in one run (sync.max_records_factor × the ` +
      `${this.liveRows ?? 0} rows in the mirror, at least ${MIN_RECORD_CAP}, at most sync.max_records); ` +
      'stopped before it fills the disk';
    this.trip(message);
    throw new RunLimitExceeded(message);
  }

  /** Waits between retries: `wait` (the caller's, or a real timer), idle time not counted. */
  sleeper(wait: ((ms: number) => Promise<void>) | undefined): (ms: number) => Promise<void> {
    return async (ms) => {
      clearTimeout(this.idle);
      try {
        await (wait ? wait(ms) : cancellableSleep(ms, this.signal));
      } finally {
        if (!this.failure) this.armIdle();
      }
    };
  }

  /** The run is over: timers stopped, and anything still open (a body nobody reads) cancelled. */
  close(): void {
    clearTimeout(this.deadline);
    clearTimeout(this.idle);
    this.controller.abort(new RunLimitExceeded('run finished'));
  }

  private armIdle(): void {
    clearTimeout(this.idle);
    const seconds = this.bounds.idleMs / 1000;
    this.idle = setTimeout(
      () =>
        this.trip(
          `no record committed for ${seconds} s (sync.idle_timeout_seconds): the operator is sending too slowly or not at all; the next run resumes from the checkpoint`,
        ),
      this.bounds.idleMs,
    );
  }

  private trip(message: string): void {
    if (this.failure !== null || this.controller.signal.aborted) return;
    this.failure = message;
    clearTimeout(this.deadline);
    clearTimeout(this.idle);
    this.controller.abort(new RunLimitExceeded(message));
  }
}
