import { describe, expect, it } from 'vitest';
import { ticksDue, worthRetrying } from '../helpers/chaos/producer.js';
import {
  type ChaosObservations,
  chaosVerdict,
  duplicateReceipts,
  lostAcknowledged,
  lostDecisions,
} from '../helpers/chaos/verdict.js';

/**
 * The chaos harness's arithmetic (test/helpers/chaos/verdict.ts): what its tests assert and its
 * bench prints is only as good as these figures, so they are checked on a made-up run.
 */

/** A run: clean 0-10 s, postgres_restart 10-12 s, its recovery 12-22 s. */
function observations(patch: Partial<ChaosObservations> = {}): ChaosObservations {
  return {
    windows: [
      { kind: 'clean', fault: null, startMs: 0, endMs: 10_000, inFlightAtFault: 0, detail: '' },
      {
        kind: 'fault',
        fault: 'postgres_restart',
        startMs: 10_000,
        endMs: 12_000,
        inFlightAtFault: 3,
        detail: 'down',
      },
      {
        kind: 'recovery',
        fault: 'postgres_restart',
        startMs: 12_000,
        endMs: 22_000,
        inFlightAtFault: 0,
        detail: '',
      },
    ],
    requests: [
      { ref: 'a', api: 0, startedMs: 1_000, ms: 30, outcome: 201 },
      { ref: 'b', api: 1, startedMs: 10_500, ms: 4_000, outcome: 503 },
      { ref: 'b', api: 0, startedMs: 14_500, ms: 20, outcome: 201 },
      { ref: 'c', api: 0, startedMs: 11_000, ms: 30_000, outcome: 'hung' },
      { ref: 'd', api: -1, startedMs: 12_500, ms: 0, outcome: 'shed' },
    ],
    produced: [
      { ref: 'a', atMs: 1_000 },
      { ref: 'b', atMs: 10_500 },
      { ref: 'c', atMs: 11_000 },
    ],
    acknowledged: new Set(['a', 'b']),
    rows: [
      // 20 finished in the clean phase (2/s), 2 during the fault (1/s), 30 after (3/s).
      ...Array.from({ length: 20 }, (_, i) => ({ ref: `x${i}`, state: 'approved', finishedAtMs: i * 500 })),
      { ref: 'a', state: 'approved', finishedAtMs: 10_100 },
      { ref: 'y', state: 'approved', finishedAtMs: 11_900 },
      ...Array.from({ length: 29 }, (_, i) => ({
        ref: `z${i}`,
        state: 'approved',
        finishedAtMs: 12_000 + i * 300,
      })),
      { ref: 'b', state: 'approved', finishedAtMs: 21_999 },
    ],
    notifications: [
      { ref: 'a', atMs: 9_000 },
      { ref: 'a', atMs: 13_000 },
      { ref: 'b', atMs: 15_000 },
      { ref: 'b', atMs: 15_100 },
      { ref: 'x1', atMs: 5_000 },
    ],
    decisions: [
      { ref: 'a', id: 'msg_1', decided: 'approved', delivered: true },
      { ref: 'b', id: 'msg_2', decided: 'approved', delivered: true },
    ],
    recordedWebhookIds: new Set(['msg_1', 'msg_2']),
    unexpectedExits: 0,
    aliveAtEnd: 2,
    replicas: 2,
    ...patch,
  };
}

describe('the chaos verdict', () => {
  it('rates per window as ratios of the clean rate; duplicates, latency and hangs of the fault and its recovery', () => {
    const v = chaosVerdict(observations());
    expect(v.cleanRate).toBe(2);
    expect(v.phases).toHaveLength(1);
    const [p] = v.phases;
    expect(p).toMatchObject({ fault: 'postgres_restart', rateDuring: 0.5, rateAfter: 1.5, duplicates: 2 });
    expect(p).toMatchObject({ inFlightAtFault: 3, lostAcknowledged: 0, lostDecisions: 0, hung: 1, shed: 1 });
    expect(p?.maxLatencyMs).toBe(30_000);
    expect(v).toMatchObject({ duplicates: 2, inFlightAtFaults: 3, hung: 1, acknowledged: 2, unfinished: [] });
  });

  it('an acknowledged ref without a row, or with a row not final, is lost; an unacknowledged one is not', () => {
    const obs = observations({
      rows: [
        { ref: 'a', state: 'accepted', finishedAtMs: null },
        { ref: 'c', state: 'queued', finishedAtMs: null },
      ],
    });
    expect(lostAcknowledged(obs)).toEqual(['a', 'b']);
    const v = chaosVerdict(obs);
    expect(v.unfinished).toEqual(['a', 'c']);
    // b was produced during the fault: the phase answers for it; a (clean phase) counts in the totals only.
    expect(v.phases[0]?.lostAcknowledged).toBe(1);
  });

  it('a decision not carried by its row, or answered 2xx but never recorded, is lost', () => {
    const base = observations();
    expect(lostDecisions(base)).toEqual([]);
    const rejectedRow = observations({
      decisions: [{ ref: 'a', id: 'msg_1', decided: 'rejected', delivered: true }],
    });
    expect(lostDecisions(rejectedRow)).toEqual(['a']);
    const unrecorded = observations({ recordedWebhookIds: new Set(['msg_1']) });
    expect(lostDecisions(unrecorded)).toEqual(['b']);
    // Not delivered (the operator gave up) and not recorded: lost only if the row lacks the decision.
    const undelivered = observations({
      decisions: [{ ref: 'a', id: 'msg_9', decided: 'approved', delivered: false }],
    });
    expect(lostDecisions(undelivered)).toEqual([]);
  });

  it('a duplicate is every receipt of a ref after its first, in time order', () => {
    expect(
      duplicateReceipts([
        { ref: 'a', atMs: 5 },
        { ref: 'a', atMs: 1 },
        { ref: 'b', atMs: 2 },
        { ref: 'a', atMs: 3 },
      ]),
    ).toEqual([3, 5]);
  });

  it('a run must start with a clean phase', () => {
    expect(() => chaosVerdict(observations({ windows: [] }))).toThrow(/clean phase/);
  });
});

describe('the chaos producer', () => {
  it('ticks at absolute times: a late wake-up owes every tick it missed', () => {
    expect(ticksDue(1_000, 1_000, 100)).toBe(1);
    expect(ticksDue(1_000, 1_009, 100)).toBe(1);
    expect(ticksDue(1_000, 1_010, 100)).toBe(2);
    expect(ticksDue(1_000, 2_000, 100)).toBe(101);
  });

  it('sends a ref to the other replica only when no answer can be trusted', () => {
    expect(worthRetrying('network')).toBe(true);
    expect(worthRetrying('hung')).toBe(true);
    expect(worthRetrying(503)).toBe(true);
    expect(worthRetrying(201)).toBe(false);
    expect(worthRetrying(200)).toBe(false);
    expect(worthRetrying(409)).toBe(false);
    expect(worthRetrying('shed')).toBe(false);
  });
});
