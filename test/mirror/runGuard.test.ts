import { describe, expect, it } from 'vitest';
import { emptyCounts } from '../../src/mirror/bookkeeping.js';
import { MIN_RECORD_CAP, RunGuard, RunLimitExceeded, recordCap } from '../../src/mirror/runGuard.js';

describe('the record cap of a list run', () => {
  it('is the factor times the mirror, never below the floor nor above the absolute cap', () => {
    expect(recordCap(0, 10, 10_000_000)).toBe(10_000_000); // a first sync: only the absolute cap
    expect(recordCap(20, 10, 10_000_000)).toBe(MIN_RECORD_CAP);
    expect(recordCap(50_000, 10, 10_000_000)).toBe(500_000);
    expect(recordCap(50_000, 1.5, 10_000_000)).toBe(75_000);
    expect(recordCap(5_000_000, 10, 10_000_000)).toBe(10_000_000);
    expect(recordCap(20, 10, 500)).toBe(500);
  });

  it('fails the run past the cap and cancels what the run still has open', () => {
    const guard = new RunGuard({ idleMs: 60_000, deadlineMs: 60_000, maxRecords: 100 }, 7, undefined);
    const counts = { ...emptyCounts(), fetched: 100 };
    guard.progress(counts);
    expect(guard.signal.aborted).toBe(false);
    counts.fetched = 101;
    expect(() => guard.progress(counts)).toThrow(RunLimitExceeded);
    expect(guard.failure).toMatch(/more than 100 records in one run \(sync\.max_records_factor × the 7 rows/);
    expect(guard.signal.aborted).toBe(true);
    guard.close();
  });

  it('passes a stop through, and cancels at close without calling it a failure', () => {
    const stop = new AbortController();
    const guard = new RunGuard({ idleMs: 60_000, deadlineMs: 60_000, maxRecords: null }, null, stop.signal);
    stop.abort();
    expect(guard.signal.aborted).toBe(true);
    expect(guard.failure).toBeNull();
    guard.close();
    expect(guard.failure).toBeNull();
  });
});
