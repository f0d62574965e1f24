import { describe, expect, it } from 'vitest';
import { ChangeSignal, WAKE_BATCH } from '../../src/db/changeSignal.js';

/** Resolves after the loop's check phase has run once more (the signal's next batch among it). */
const nextTurn = () => new Promise<void>((r) => setImmediate(r));

describe('ChangeSignal wakes its waiters in batches', () => {
  it('wakes the first batch at once and every other waiter exactly once over the next turns', async () => {
    const signal = new ChangeSignal();
    const total = WAKE_BATCH * 2 + 7;
    const calls = new Array<number>(total).fill(0);
    for (let i = 0; i < total; i++) signal.park(signal.version, () => calls[i]!++);
    signal.announce(1);
    expect(calls.filter((n) => n === 1)).toHaveLength(WAKE_BATCH);
    // Another callback queued now runs between the batches, not after all of them.
    let woken = -1;
    setImmediate(() => {
      woken = calls.filter((n) => n === 1).length;
    });
    for (let turn = 0; turn < 4; turn++) await nextTurn();
    expect(woken).toBeGreaterThanOrEqual(WAKE_BATCH);
    expect(woken).toBeLessThan(total);
    expect(calls.every((n) => n === 1)).toBe(true);
    expect(signal.waiting).toBe(0);
  });

  it('still wakes a waiter unparked while its batch was pending: its announcement came', async () => {
    const signal = new ChangeSignal();
    for (let i = 0; i < WAKE_BATCH; i++) signal.park(signal.version, () => {});
    let late = 0;
    const wake = () => late++;
    signal.park(signal.version, wake);
    signal.announce(1);
    expect(late).toBe(0);
    // A stream woken by its drain meanwhile unparks; the commit must still reach it.
    signal.unpark(wake);
    for (let turn = 0; turn < 3; turn++) await nextTurn();
    expect(late).toBe(1);
  });

  it('answers long-poll waiters past the first batch with true', async () => {
    const signal = new ChangeSignal();
    const never = new AbortController().signal;
    const waits = Array.from({ length: WAKE_BATCH + 50 }, () => signal.whenChanged(signal.version, never));
    signal.announce(1);
    expect(await Promise.all(waits)).toEqual(waits.map(() => true));
  });
});
