import { describe, expect, it } from 'vitest';
import {
  canMove,
  fromStates,
  type GuardFacts,
  nextState,
  OPERATION_EVENTS,
  OPERATION_STATES,
  type OperationEvent,
  type OperationState,
} from '../../src/operations/states.js';

/**
 * The life of an operation written out independently of src/operations/states.ts: event → from →
 * [to, guard]. Any from-state missing here must be refused. A change to the table has to be made
 * here too, on purpose.
 */
const EXPECTED: Record<
  OperationEvent,
  Partial<Record<OperationState, [OperationState, keyof GuardFacts | null]>>
> = {
  claim: { queued: ['sending', 'due'], sending: ['sending', 'leaseExpired'] },
  accept: { sending: ['accepted', 'ownLease'] },
  requeue: { sending: ['queued', 'ownLease'] },
  fail: { sending: ['failed', 'ownLease'] },
  release: { sending: ['queued', 'ownLease'] },
  approve: { accepted: ['approved', null] },
  reject: { accepted: ['rejected', null] },
  retry: { failed: ['queued', null] },
  expedite: { queued: ['queued', null] },
  cancel: {
    queued: ['cancelled', null],
    failed: ['cancelled', null],
    sending: ['cancelled', 'leaseExpired'],
  },
};

const ALL_FACTS: GuardFacts = { due: true, leaseExpired: true, ownLease: true };

const cases = OPERATION_EVENTS.flatMap((event) => OPERATION_STATES.map((from) => ({ event, from })));

describe('the transition table (from-state × event → to-state or refusal)', () => {
  it.each(cases)('$event on a $from row', ({ event, from }) => {
    const expected = EXPECTED[event][from];
    if (!expected) {
      // Refused whatever the row's facts.
      expect(nextState(from, event, ALL_FACTS)).toEqual({ ok: false, why: 'not-allowed' });
      expect(nextState(from, event)).toEqual({ ok: false, why: 'not-allowed' });
      return;
    }
    const [to, fact] = expected;
    expect(nextState(from, event, ALL_FACTS)).toEqual({ ok: true, to });
    if (fact === null) {
      expect(nextState(from, event, {})).toEqual({ ok: true, to });
    } else {
      // Every other fact holds, this one does not: refused, and the guard named.
      const verdict = nextState(from, event, { ...ALL_FACTS, [fact]: false });
      expect(verdict.ok).toBe(false);
      expect(verdict).toMatchObject({ why: 'guard' });
    }
  });

  it('final states move only by a person: approved, rejected and cancelled never move; failed only by retry or cancel', () => {
    for (const from of ['approved', 'rejected', 'cancelled'] as const) {
      for (const event of OPERATION_EVENTS) expect(nextState(from, event, ALL_FACTS).ok).toBe(false);
    }
    const failedMoves = OPERATION_EVENTS.filter((event) => nextState('failed', event, ALL_FACTS).ok);
    expect(failedMoves).toEqual(['retry', 'cancel']);
  });

  it('nothing the operator accepted can be cancelled', () => {
    for (const from of ['accepted', 'approved', 'rejected'] as const) {
      expect(nextState(from, 'cancel', ALL_FACTS)).toEqual({ ok: false, why: 'not-allowed' });
    }
    expect(nextState('sending', 'cancel', { leaseExpired: false })).toEqual({
      ok: false,
      why: 'guard',
      guard: 'lease-expired',
    });
  });

  it('fromStates lists exactly the allowed from-states of an event, in life order', () => {
    expect(fromStates('cancel').map((m) => m.from)).toEqual(['queued', 'sending', 'failed']);
    expect(fromStates('claim')).toEqual([
      { from: 'queued', to: 'sending', when: 'due' },
      { from: 'sending', to: 'sending', when: 'lease-expired' },
    ]);
  });

  it('canMove knows every state change an event makes, and none other', () => {
    const moves = new Set(
      OPERATION_EVENTS.flatMap((e) => Object.entries(EXPECTED[e]).map(([from, [to]]) => `${from}>${to}`)),
    );
    for (const from of OPERATION_STATES) {
      for (const to of OPERATION_STATES) expect(canMove(from, to)).toBe(moves.has(`${from}>${to}`));
    }
  });
});
