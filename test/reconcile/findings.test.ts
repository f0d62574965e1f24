import { describe, expect, it } from 'vitest';
import { reconcileSchema } from '../../src/config/configReconcile.js';
import {
  balanceSheets,
  balancesOf,
  type LedgerFact,
  type OperatorSide,
} from '../../src/reconcile/balances.js';
import type { CustodyState } from '../../src/reconcile/findingKinds.js';
import { type Deposit, decideFindings, type LogRetirement } from '../../src/reconcile/findings.js';
import { fact } from './ledgerFacts.js';

/** The pure rules (src/reconcile/findings.ts): which findings hold, and when a condition falls due. */

const T0 = Date.parse('2026-03-01T00:00:00.000Z');
const at = (hours: number) => new Date(T0 + hours * 3_600_000).toISOString();
const HELD: CustodyState = { state: 'held' };

interface World {
  facts: LedgerFact[];
  amounts?: Record<string, number>;
  custody?: Record<string, CustodyState>;
  log?: LogRetirement[];
  deposits?: Deposit[];
  match?: Record<string, unknown>;
}

/** The findings as `kind subject id`, and the verdict, at `now` hours. */
function decide(world: World, nowHours: number) {
  const custody = new Map(Object.entries(world.custody ?? { I1: HELD, U1: HELD }));
  const side: OperatorSide = {
    issuanceAmounts: new Map(Object.entries(world.amounts ?? { I1: 1_000_000 })),
    custodyIssuances: custody,
    custodyUnits: custody,
    log: new Map(),
  };
  const settings = {
    reconcile: reconcileSchema.parse({ retire_match: world.match ?? {} }),
    decisionWarnHours: 24,
  };
  const verdict = decideFindings(
    balanceSheets(balancesOf(world.facts), side),
    world.facts,
    world.log ?? [],
    world.deposits ?? [],
    settings,
    T0 + nowHours * 3_600_000,
  );
  return { ...verdict, names: verdict.findings.map((f) => `${f.kind} ${f.subject} ${f.subjectId}`) };
}

describe('over-issuance', () => {
  it('what detokenizations gave back in whole tonnes may be tokenized again; beyond that is a finding', () => {
    const facts = [
      fact({ kind: 'tokenization', amountKg: 10_000 }),
      // Gives back 2 t: the 0.5 t below a tonne is not re-tokenizable.
      fact({ kind: 'detokenization', amountKg: 2_500 }),
      fact({ kind: 'tokenization', amountKg: 2_000 }),
    ];
    expect(decide({ facts, amounts: { I1: 10_000 } }, 1).names).toEqual([]);
    const over = decide(
      { facts: [...facts, fact({ kind: 'tokenization', amountKg: 500 })], amounts: { I1: 10_000 } },
      1,
    );
    expect(over.names).toEqual(['over-issuance issuance I1']);
    expect(over.findings[0]).toMatchObject({ expectedKg: 10_000, foundKg: 10_500, severity: 'critical' });
    expect(over.findings[0]?.detail).toBe(
      'issuance I1: 12.5 t tokenized less 2 t given back by detokenization (10.5 t), beyond its amount of 10 t',
    );
  });

  it('an issuance the mirror lacks has no amount to exceed; a rejected or awaiting detokenization gives nothing back', () => {
    expect(decide({ facts: [fact({ amountKg: 5_000 })], amounts: {} }, 1).names).toEqual([]);
    const facts = [
      fact({ kind: 'tokenization', amountKg: 10_000 }),
      fact({ kind: 'detokenization', amountKg: 3_000, state: 'rejected' }),
      fact({ kind: 'detokenization', amountKg: 3_000, state: 'accepted' }),
      fact({ kind: 'tokenization', amountKg: 1_000 }),
    ];
    expect(decide({ facts, amounts: { I1: 10_000 } }, 1).names).toEqual(['over-issuance issuance I1']);
  });
});

describe('not-in-custody', () => {
  it('never in custody: operations other than rejected, cancelled and failed ones', () => {
    const custody = {};
    expect(
      decide({ facts: [fact({ state: 'rejected' }), fact({ state: 'failed' })], custody }, 1).names,
    ).toEqual([]);
    expect(decide({ facts: [fact({ state: 'queued' })], custody }, 1).names).toEqual([
      'not-in-custody issuance I1',
      'not-in-custody unit U1',
    ]);
  });

  it('awaiting (named, not read): no finding; ended: operations after the end, or tokens still outstanding', () => {
    const ended: CustodyState = { state: 'ended', at: at(2) };
    const before = fact({ kind: 'tokenization', amountKg: 1_000, createdAt: at(1) });
    const gone = fact({ kind: 'detokenization', amountKg: 1_000, createdAt: at(1) });
    expect(decide({ facts: [before], custody: { I1: { state: 'awaiting' }, U1: HELD } }, 3).names).toEqual(
      [],
    );
    expect(decide({ facts: [before, gone], custody: { I1: ended, U1: HELD } }, 3).names).toEqual([]);
    const holding = decide({ facts: [before], custody: { I1: ended, U1: HELD } }, 3);
    expect(holding.names).toEqual(['not-in-custody issuance I1']);
    expect(holding.findings[0]).toMatchObject({ expectedKg: 0, foundKg: 1_000, ref: before.ref });
    const after = fact({ kind: 'transfer', amountKg: 1, createdAt: at(2.5), ref: 'late' });
    const both = decide({ facts: [before, after], custody: { I1: ended, U1: HELD } }, 3);
    expect(both.findings[0]?.ref).toBe('late');
    expect(both.findings[0]?.detail).toBe(
      `1 operation(s) reported on issuance I1 after its custody ended (${at(2)}); 1 t still outstanding on issuance I1, whose custody ended (${at(2)})`,
    );
  });
});

describe('retirement-missing', () => {
  const retire = (over: Partial<LedgerFact>) =>
    fact({ kind: 'retire', amountKg: 2_000, decidedAt: at(1), createdAt: at(0), ...over });
  const tokens = fact({ kind: 'tokenization', amountKg: 100_000 });

  it('falls due when the window ends, counted from the approval', () => {
    const facts = [tokens, retire({ ref: 'r' })];
    const inside = decide({ facts }, 72.9);
    expect(inside.names).toEqual([]);
    expect(inside.dueAt.get('I1')).toBe(T0 + 73 * 3_600_000);
    expect(decide({ facts }, 73).names).toEqual(['retirement-missing operation r']);
  });

  it('greedy, oldest approval first, each log entry once; an entry matches by issuance and quantity in kg', () => {
    const facts = [
      tokens,
      retire({ ref: 'late', decidedAt: at(2) }),
      retire({ ref: 'early', decidedAt: at(1) }),
    ];
    const log: LogRetirement[] = [
      { id: 'L1', issuanceId: 'I1', quantityKg: 2_000 },
      { id: 'L2', issuanceId: 'I2', quantityKg: 2_000 },
      { id: 'L3', issuanceId: 'I1', quantityKg: 2_001 },
      { id: 'L4', issuanceId: 'I1', quantityKg: null },
    ];
    expect(decide({ facts, log }, 100).names).toEqual(['retirement-missing operation late']);
  });

  it('by unit alone when retire_match says so; an operation without the matched field never matches', () => {
    const facts = [tokens, retire({ ref: 'u', unitId: 'U1' }), retire({ ref: 'no-unit', unitId: null })];
    const log: LogRetirement[] = [{ id: 'U1', issuanceId: 'I-other', quantityKg: 1 }];
    const match = { issuance: false, unit: true, quantity: false };
    expect(decide({ facts, log, match }, 100).names).toEqual(['retirement-missing operation no-unit']);
  });
});

describe('decision-overdue and deposit-not-tokenized', () => {
  it('an accepted operation undecided past decision_warn_hours; due at that moment before', () => {
    const facts = [fact({ ref: 'a', state: 'accepted', acceptedAt: at(1), issuanceId: null, unitId: null })];
    const early = decide({ facts, custody: {} }, 24.5);
    expect(early.names).toEqual([]);
    expect(early.dueAt.get('')).toBe(T0 + 25 * 3_600_000);
    expect(decide({ facts, custody: {} }, 25).names).toEqual(['decision-overdue operation a']);
  });

  it('a deposit with no Tokenization within the days; a cancelled Tokenization does not count', () => {
    const deposits: Deposit[] = [
      { kind: 'issuances', id: 'I1', at: at(0) },
      { kind: 'units', id: 'U7', at: at(0) },
    ];
    const cancelled = [fact({ state: 'cancelled', unitId: 'U7' })];
    const early = decide({ facts: cancelled, deposits, custody: {} }, 7 * 24 - 1);
    expect(early.names).toEqual([]);
    expect(early.dueAt.get('I1')).toBe(T0 + 7 * 24 * 3_600_000);
    expect(early.dueAt.get('')).toBe(T0 + 7 * 24 * 3_600_000);
    expect(decide({ facts: cancelled, deposits, custody: {} }, 7 * 24).names).toEqual([
      'deposit-not-tokenized issuance I1',
      'deposit-not-tokenized unit U7',
    ]);
    const reported = [fact({ state: 'queued', unitId: 'U7' })];
    expect(decide({ facts: reported, deposits, custody: { I1: HELD, U7: HELD } }, 200).names).toEqual([]);
  });
});
