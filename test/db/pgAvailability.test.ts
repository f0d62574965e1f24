import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { FailureStreak, STORE_RETRY_CAP_MS } from '../../src/common/failureStreak.js';
import {
  type AvailabilityChange,
  type AvailabilityState,
  observeAvailability,
  PgAvailability,
  unreachableReason,
} from '../../src/postgres/availability.js';

/**
 * The database availability tracker's decisions (issue 25): an outage is one change when it
 * starts and one when it ends, whatever the number of failed attempts in between; only a server
 * that is not there counts, not one that refuses us for another reason.
 */

const pgError = (message: string, code?: string) => Object.assign(new Error(message), code ? { code } : {});

describe('observeAvailability', () => {
  const up: AvailabilityState = { up: true, since: 0 };

  it('goes down at the first unreachable failure and says so once, however many follow', () => {
    const first = observeAvailability(up, { kind: 'failed', at: 1_000, reason: 'connect ECONNREFUSED' });
    expect(first.change).toEqual({ kind: 'unreachable', reason: 'connect ECONNREFUSED', at: 1_000 });
    expect(first.state).toEqual({ up: false, since: 1_000, reason: 'connect ECONNREFUSED', failures: 1 });
    let state = first.state;
    for (let at = 1_100; at < 2_000; at += 100) {
      const next = observeAvailability(state, { kind: 'failed', at, reason: 'connect ECONNREFUSED' });
      expect(next.change).toBeNull();
      state = next.state;
    }
    // Still dated from the first failure, its reason kept, the attempts counted.
    expect(state).toMatchObject({ up: false, since: 1_000, reason: 'connect ECONNREFUSED', failures: 10 });
  });

  it('comes back at the first connection, with the outage duration and the failed attempts', () => {
    const down: AvailabilityState = { up: false, since: 1_000, reason: 'shutting down', failures: 7 };
    const back = observeAvailability(down, { kind: 'connected', at: 61_000 });
    expect(back.change).toEqual({ kind: 'reachable', downMs: 60_000, failures: 7, at: 61_000 });
    expect(back.state).toEqual({ up: true, since: 61_000 });
    // Further connections while up change nothing.
    expect(observeAvailability(back.state, { kind: 'connected', at: 62_000 }).change).toBeNull();
  });

  it('work handed back sound ends an outage only when it was begun after the outage did', () => {
    const down: AvailabilityState = { up: false, since: 1_000, reason: 'shutting down', failures: 2 };
    // Taken before the outage: it may have ended on the server's last words, proving nothing.
    expect(observeAvailability(down, { kind: 'answered', at: 3_000, takenAt: 999 })).toEqual({
      state: down,
      change: null,
    });
    const back = observeAvailability(down, { kind: 'answered', at: 3_000, takenAt: 2_000 });
    expect(back.change).toEqual({ kind: 'reachable', downMs: 2_000, failures: 2, at: 3_000 });
    expect(
      observeAvailability(back.state, { kind: 'answered', at: 4_000, takenAt: 3_500 }).change,
    ).toBeNull();
  });

  it('a failure that is not an outage (null reason) changes nothing, up or down', () => {
    expect(observeAvailability(up, { kind: 'failed', at: 5, reason: null })).toEqual({
      state: up,
      change: null,
    });
    const down: AvailabilityState = { up: false, since: 1, reason: 'x', failures: 1 };
    expect(observeAvailability(down, { kind: 'failed', at: 5, reason: null })).toEqual({
      state: down,
      change: null,
    });
  });
});

describe('unreachableReason', () => {
  it.each([
    ['refused', pgError('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
    ['reset', pgError('read ECONNRESET', 'ECONNRESET')],
    ['shutting down', pgError('terminating connection due to administrator command', '57P01')],
    ['starting up', pgError('the database system is starting up', '57P03')],
    ['connection failure class', pgError('connection failure', '08006')],
    ['cut while opening', pgError('Connection terminated unexpectedly')],
    ['connect timeout', pgError('Connection terminated due to connection timeout')],
  ])('%s: unreachable', (_name, err) => {
    expect(unreachableReason(err)).toBe(err.message);
  });

  it.each([
    [
      'no free slot (53300): reachable, this process goes on with what it holds',
      pgError('sorry, too many clients already', '53300'),
    ],
    ['wrong password', pgError('password authentication failed for user "vcu"', '28P01')],
    ['the pool queue timing out', pgError('timeout exceeded when trying to connect')],
    ['a query error', pgError('relation "x" does not exist', '42P01')],
    ['not an error', 'ECONNREFUSED'],
  ])('%s: not an outage', (_name, err) => {
    expect(unreachableReason(err)).toBeNull();
  });

  it('keeps the first line only, with no password in it', () => {
    const err = pgError('connect ECONNREFUSED\npostgres://vcu:hunter2@db/x', 'ECONNREFUSED');
    expect(unreachableReason(err)).toBe('connect ECONNREFUSED');
  });
});

describe('PgAvailability (the edge)', () => {
  it('tells its listeners once per outage each way, and answers what status asks', () => {
    const clock = new ManualClock(10_000);
    const availability = new PgAvailability(clock);
    const changes: AvailabilityChange[] = [];
    availability.onChange((c) => changes.push(c));
    expect(availability.reachable()).toBe(true);
    expect(availability.outage()).toBeNull();

    clock.advance(1_000);
    for (let i = 0; i < 5; i++)
      availability.noteConnectFailed(pgError('connect ECONNREFUSED', 'ECONNREFUSED'));
    availability.noteConnectFailed(pgError('sorry, too many clients already', '53300'));
    expect(availability.reachable()).toBe(false);
    expect(availability.outage()).toEqual({ since: 11_000, reason: 'connect ECONNREFUSED' });

    clock.advance(4_000);
    availability.noteConnected();
    availability.noteConnected();
    expect(changes).toEqual([
      { kind: 'unreachable', reason: 'connect ECONNREFUSED', at: 11_000 },
      { kind: 'reachable', downMs: 4_000, failures: 5, at: 15_000 },
    ]);
    expect(availability.reachable()).toBe(true);
  });

  it('a server with no free slot is not an outage', () => {
    const availability = new PgAvailability(new ManualClock());
    const changes: AvailabilityChange[] = [];
    availability.onChange((c) => changes.push(c));
    availability.noteConnectFailed(pgError('sorry, too many clients already', '53300'));
    expect(changes).toEqual([]);
    expect(availability.reachable()).toBe(true);
  });
});

describe('FailureStreak', () => {
  it('backs off from the poll period to the cap, says the first failure of a run only, and counts the run when it ends', () => {
    const streak = new FailureStreak(20, () => 1);
    const steps = Array.from({ length: 12 }, () => streak.failed());
    expect(steps.map((s) => s.first)).toEqual([true, ...Array(11).fill(false)]);
    // random() = 1: the delay is the ceiling, doubling from the poll period up to the cap.
    expect(steps.slice(0, 4).map((s) => s.delayMs)).toEqual([20, 40, 80, 160]);
    expect(steps.at(-1)?.delayMs).toBe(STORE_RETRY_CAP_MS);
    expect(streak.succeeded()).toBe(12);
    expect(streak.succeeded()).toBe(0);
    expect(streak.failed()).toEqual({ delayMs: 20, first: true });
  });

  it('never waits less than its poll period, even when that is above the cap', () => {
    const streak = new FailureStreak(10_000, () => 1);
    expect(streak.failed().delayMs).toBe(10_000);
    expect(streak.failed().delayMs).toBe(10_000);
  });
});
