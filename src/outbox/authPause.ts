import { isoAt } from '../clock.js';
import type { Logger } from '../log.js';
import { backoffDelayMs } from './backoff.js';
import type { AttemptOutcome, NextStep, RetryPolicy } from './nextStep.js';
import type { OutboxPause, PauseRecord } from './pause.js';

/** How one attempt moves the auth pause. */
export type PauseMove = 'refused' | 'resumed' | 'still-paused' | 'none';

/** Pure: 401/403 pause (or keep paused) all sending; any other HTTP answer while paused resumes it. */
export function pauseMove(paused: boolean, next: NextStep, outcome: AttemptOutcome): PauseMove {
  if (next.state === 'queued' && next.pause) return 'refused';
  if (!paused) return 'none';
  // Any HTTP answer other than 401/403 proves the key is accepted again.
  const authOk =
    outcome.kind === 'answered' || (outcome.error.status !== undefined && outcome.error.kind !== 'auth');
  return authOk ? 'resumed' : 'still-paused';
}

/**
 * The dispatcher's pause after the operator refused our credentials. The record lives in
 * `daemon_state` (see pause.ts) so other processes see it; the probe backoff lives here, per process.
 */
export class AuthPause {
  private current: OutboxPause | null = null;
  private failures = 0;
  private probeAt = 0;

  constructor(
    private readonly ctx: { log: Logger },
    private readonly policy: RetryPolicy,
    private readonly random: () => number,
    /** Where the pause is kept for other processes (status) and the next start. */
    private readonly record: PauseRecord,
  ) {}

  /** The pause in force, or null when sending runs. */
  get state(): OutboxPause | null {
    return this.current;
  }

  /** When the next probe may go while paused (ms since epoch). */
  get probeAtMs(): number {
    return this.probeAt;
  }

  /** Picks up a pause an earlier process left behind, to be probed at once. */
  restore(nowMs: number): void {
    this.current = this.record.read();
    this.probeAt = nowMs;
  }

  /** Moves the pause for one settled attempt; false for a refusal, which the pause reports instead of the step. */
  apply(next: NextStep, outcome: AttemptOutcome, nowMs: number): boolean {
    const move = pauseMove(this.current !== null, next, outcome);
    if (move === 'none') return true;
    if (move === 'resumed' && this.current) {
      this.record.clear();
      this.ctx.log.info(
        { event: 'outbox.resumed', pausedSince: this.current.since },
        'operator accepts our credentials again: sending resumed',
      );
      this.current = null;
      this.failures = 0;
      return true;
    }
    this.failures += 1;
    this.probeAt = nowMs + backoffDelayMs(this.failures, this.policy, this.random);
    if (move === 'still-paused') return true;
    // A refusal is always a queued step; the check only narrows the type.
    if (!this.current && next.state === 'queued') {
      this.current = this.record.write(
        { reason: next.error, status: next.status, since: isoAt(nowMs) },
        isoAt(nowMs),
      );
      this.ctx.log.error(
        { event: 'outbox.paused', status: next.status, reason: next.error },
        `operator refused our credentials (${next.status}): sending paused for all rows until a probe succeeds`,
      );
    }
    return false;
  }
}
