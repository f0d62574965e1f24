import { backoffDelayMs } from '../common/backoff.js';
import { isoAt } from '../common/clock.js';
import { errorMessage } from '../common/errors.js';
import type { Logger } from '../common/log.js';
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
 * The dispatcher's pause after the operator refused our credentials. The state in force is this
 * object's; its record lives in `daemon_state` (see pause.ts; none when `record` is null) so other
 * processes see it, written in the order the moves happen; the probe backoff lives here, per process.
 */
export class AuthPause {
  private current: OutboxPause | null = null;
  private failures = 0;
  private probeAt = 0;
  private writes: Promise<void> = Promise.resolve();

  constructor(
    private readonly log: Logger,
    private readonly record: PauseRecord | null,
    private readonly policy: RetryPolicy,
    private readonly random: () => number,
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
  async restore(nowMs: number): Promise<void> {
    this.probeAt = nowMs;
    try {
      this.current = (await this.record?.read()) ?? null;
    } catch (err) {
      // Sending starts unpaused; a refusal pauses it again at the first attempt.
      this.log.error(
        { event: 'outbox.pause.read_error', err },
        `could not read the sending pause record: ${errorMessage(err)}`,
      );
    }
  }

  /** Resolves once the record's writes so far are done. */
  async recorded(): Promise<void> {
    await this.writes;
  }

  /** Queues a write of the record: after the ones before it; a failure is logged (the state here holds). */
  private persist(work: (record: PauseRecord) => Promise<unknown>): void {
    const record = this.record;
    if (!record) return;
    this.writes = this.writes
      .then(() => work(record))
      .then(
        () => {},
        (err: unknown) => {
          this.log.warn(
            { event: 'outbox.pause.record_error', err },
            `could not record the sending pause: ${errorMessage(err)}`,
          );
        },
      );
  }

  /** Moves the pause for one settled attempt; false for a refusal, which the pause reports instead of the step. */
  apply(next: NextStep, outcome: AttemptOutcome, nowMs: number): boolean {
    const move = pauseMove(this.current !== null, next, outcome);
    if (move === 'none') return true;
    if (move === 'resumed' && this.current) {
      this.persist((record) => record.clear());
      this.log.info(
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
      const pause = { reason: next.error, status: next.status, since: isoAt(nowMs) };
      this.current = pause;
      this.persist(async (record) => {
        const kept = await record.write(pause, isoAt(nowMs));
        // An older record keeps its `since`.
        if (this.current === pause) this.current = kept;
      });
      this.log.error(
        { event: 'outbox.paused', status: next.status, reason: next.error },
        `operator refused our credentials (${next.status}): sending paused for all rows until a probe succeeds`,
      );
    }
    return false;
  }
}
