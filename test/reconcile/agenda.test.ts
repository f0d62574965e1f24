import { describe, expect, it } from 'vitest';
import { FULL_PASS_ABOVE, ReconcileAgenda, SCOPE_MOST } from '../../src/reconcile/agenda.js';

/**
 * What the reconciler owes next (pure): a full pass first, then scoped passes over what was
 * touched, due times kept earliest per issuance and turned into work when the clock passes them,
 * and a full pass when one is due or too much was touched.
 */

const HOUR = 3_600_000;
const none = { dueAt: new Map<string, number>(), ledgered: new Set<string>() };

/** An agenda past its first full pass at `at`, with `dueAt`. */
function afterFull(at = 0, dueAt: Array<[string, number]> = []): ReconcileAgenda {
  const agenda = new ReconcileAgenda(24 * HOUR);
  expect(agenda.plan()).toEqual({ kind: 'full' });
  agenda.touch(['ignored: the full pass covers it']);
  agenda.fullDone({ dueAt: new Map(dueAt) }, at);
  return agenda;
}

describe('the reconciler agenda', () => {
  it('owes a full pass first; afterwards touched issuances are one scoped pass, done once', () => {
    const agenda = afterFull();
    expect(agenda.plan()).toEqual({ kind: 'none' });
    agenda.touch(['9', '7']);
    agenda.touch(['7']);
    expect(agenda.plan()).toEqual({ kind: 'scoped', scope: ['7', '9'] });
    agenda.scopedDone(['7', '9'], none);
    expect(agenda.plan()).toEqual({ kind: 'none' });
    expect(agenda.pending).toBe(false);
  });

  it('cuts what was touched into passes of SCOPE_MOST issuances, one after another, none lost', () => {
    const agenda = afterFull();
    const ids = Array.from({ length: 2 * SCOPE_MOST + 5 }, (_, i) => `i${String(i).padStart(4, '0')}`);
    agenda.touch(ids);
    const seen: string[] = [];
    for (let pass = 0; pass < 3; pass++) {
      const plan = agenda.plan();
      if (plan.kind !== 'scoped') throw new Error(`pass ${pass}: ${plan.kind}`);
      expect(plan.scope.length).toBe(pass < 2 ? SCOPE_MOST : 5);
      expect(agenda.pending).toBe(true);
      seen.push(...plan.scope);
      agenda.scopedDone(plan.scope, none);
    }
    expect(seen).toEqual(ids);
    expect(agenda.plan()).toEqual({ kind: 'none' });
  });

  it('keeps what was touched until a pass goes through (a failed pass loses nothing)', () => {
    const agenda = afterFull();
    agenda.touch(['7']);
    // The pass failed: nothing reported done; touched meanwhile joins.
    agenda.touch(['8']);
    expect(agenda.plan()).toEqual({ kind: 'scoped', scope: ['7', '8'] });
  });

  it('touches the issuances the ledger read outside the scope, not those in it', () => {
    const agenda = afterFull();
    agenda.touch(['7']);
    agenda.scopedDone(['7'], { dueAt: new Map(), ledgered: new Set(['7', '12']) });
    expect(agenda.plan()).toEqual({ kind: 'scoped', scope: ['12'] });
  });

  it('keeps the earliest due time per issuance; a scoped pass replaces its own', () => {
    const agenda = afterFull(0, [['7', 10 * HOUR]]);
    agenda.touch(['8']);
    agenda.scopedDone(['8'], {
      dueAt: new Map([
        ['8', 5 * HOUR],
        ['7', 12 * HOUR],
      ]),
      ledgered: new Set(),
    });
    expect(agenda.nextAt()).toBe(5 * HOUR);
    // Issuance 8 looked at again: its condition is gone; 7 keeps its earlier time.
    agenda.touch(['8']);
    agenda.scopedDone(['8'], none);
    expect(agenda.nextAt()).toBe(10 * HOUR);
    agenda.takeDue(10 * HOUR - 1);
    expect(agenda.plan()).toEqual({ kind: 'none' });
    agenda.takeDue(10 * HOUR);
    expect(agenda.plan()).toEqual({ kind: 'scoped', scope: ['7'] });
  });

  it("a due '' (what only a full pass sees) and the schedule owe a full pass", () => {
    const agenda = afterFull(0, [['', 2 * HOUR]]);
    expect(agenda.nextAt()).toBe(2 * HOUR);
    agenda.takeDue(2 * HOUR);
    expect(agenda.plan()).toEqual({ kind: 'full' });
    agenda.fullDone(none, 2 * HOUR);
    expect(agenda.nextAt()).toBe(26 * HOUR);
    agenda.takeDue(26 * HOUR);
    expect(agenda.wantsFull).toBe(true);
  });

  it('touched beyond FULL_PASS_ABOVE issuances owes one full pass instead, holding no ids', () => {
    const agenda = afterFull();
    agenda.touch(Array.from({ length: FULL_PASS_ABOVE + 1 }, (_, i) => String(i)));
    expect(agenda.plan()).toEqual({ kind: 'full' });
    agenda.fullDone(none, 0);
    expect(agenda.plan()).toEqual({ kind: 'none' });
  });
});
