import { describe, expect, it } from 'vitest';
import { amountKg, ledgerEntryOf, ledgerEntryOfNotification } from '../../src/outbox/ledgerEntry.js';
import { belowTonne, tonnes, tonnesKg } from '../../src/reconcile/amounts.js';
import { balanceSheets, balancesOf } from '../../src/reconcile/balances.js';
import { fact } from './ledgerFacts.js';

/** The pure amounts and balances of the reconciliation (src/reconcile/amounts.ts, balances.ts). */

describe('amounts in kg', () => {
  it('tCO2e (also unnamed, any case) times 1000, kgCO2e as it is, to the gram', () => {
    expect(amountKg(1.5, 'tCO2e')).toBe(1500);
    expect(amountKg(1.5, 'TCO2E')).toBe(1500);
    expect(amountKg(1.5, undefined)).toBe(1500);
    expect(amountKg(1.5, null)).toBe(1500);
    expect(amountKg('2.25', ' kgCO2e ')).toBe(2.25);
    expect(amountKg(0.1 + 0.2, 'tCO2e')).toBe(300);
    expect(amountKg(1.0004, 'kgCO2e')).toBe(1);
    expect(tonnesKg(500)).toBe(500_000);
  });

  it('unreadable: another unit, a negative, not a number, an empty text', () => {
    for (const [amount, unit] of [
      [5, 'lb'],
      [-1, 'tCO2e'],
      ['five', 'tCO2e'],
      ['', 'tCO2e'],
      [Number.POSITIVE_INFINITY, 'tCO2e'],
      [true, 'tCO2e'],
      [null, 'tCO2e'],
    ] as const)
      expect(amountKg(amount, unit), `${String(amount)} ${unit}`).toBeNull();
  });

  it('tonnes for sentences and the part below a whole tonne', () => {
    expect(tonnes(12_500)).toBe('12.5 t');
    expect(tonnes(-2_000)).toBe('-2 t');
    expect(belowTonne(10_500)).toBe(500);
    expect(belowTonne(3_000)).toBe(0);
    expect(belowTonne(1_234.567)).toBe(234.567);
    expect(belowTonne(-500)).toBe(0);
  });

  it('a ledger entry from a body: kind in any spelling, ids as text, amount in kg; garbage reads as unknown', () => {
    expect(
      ledgerEntryOf(
        JSON.stringify({
          operationType: 'postRetirement',
          issuanceId: 42,
          unitId: ' U7 ',
          transactionAmount: 3,
          transactionUnit: 'kgCO2e',
        }),
      ),
    ).toEqual({ kind: 'retire', issuanceId: '42', unitId: 'U7', amountKg: 3 });
    expect(ledgerEntryOf('not json')).toEqual({
      kind: 'unknown',
      issuanceId: null,
      unitId: null,
      amountKg: null,
    });
    expect(
      ledgerEntryOf(JSON.stringify({ operationType: 'Mint', issuanceId: '', transactionAmount: 1 })),
    ).toEqual({ kind: 'unknown', issuanceId: null, unitId: null, amountKg: 1000 });
  });

  it("the entry of a notification (written when it is queued) is the entry of its body's JSON (the catch-up's)", () => {
    const notifications: Array<Record<string, unknown>> = [
      {
        operationType: 'Tokenization',
        issuanceId: 7,
        unitId: 101,
        transactionAmount: 10,
        transactionUnit: 'tCO2e',
      },
      { operationType: ' retire ', issuanceId: ' 8 ', unitId: '', transactionAmount: '2.5' },
      {
        operationType: 'Detokenization',
        issuanceId: 1e21,
        unitId: -3,
        transactionAmount: 0.0005,
        transactionUnit: 'KG',
      },
      { operationType: 42, issuanceId: null, transactionAmount: Number.NaN, transactionUnit: 'lb' },
      { operationType: 'transfer', issuanceId: 12.5, unitId: undefined, transactionAmount: -1 },
      {},
    ];
    for (const n of notifications)
      expect(ledgerEntryOfNotification(n)).toEqual(ledgerEntryOf(JSON.stringify(n)));
  });
});

describe('balances', () => {
  it('count approved operations only; queued, sending and accepted are awaiting; rejected, failed, cancelled nothing', () => {
    const { issuances } = balancesOf([
      fact({ kind: 'tokenization', amountKg: 10_000 }),
      fact({ kind: 'transfer', amountKg: 4_000 }),
      fact({ kind: 'retire', amountKg: 3_000 }),
      fact({ kind: 'detokenization', amountKg: 2_500 }),
      fact({ kind: 'tokenization', amountKg: 99_000, state: 'queued' }),
      fact({ kind: 'retire', amountKg: 99_000, state: 'sending' }),
      fact({ kind: 'retire', amountKg: 99_000, state: 'accepted' }),
      fact({ kind: 'retire', amountKg: 99_000, state: 'rejected' }),
      fact({ kind: 'retire', amountKg: 99_000, state: 'failed' }),
      fact({ kind: 'retire', amountKg: 99_000, state: 'cancelled', ref: 'last' }),
    ]);
    expect(issuances.get('I1')).toEqual({
      tokenizedKg: 10_000,
      transferredKg: 4_000,
      retiredKg: 3_000,
      detokenizedKg: 2_500,
      outstandingKg: 4_500,
      fractionKg: 500,
      approved: 4,
      awaiting: 3,
      unreadable: 0,
      lastRef: 'last',
    });
  });

  it('unreadable amounts and unknown kinds are counted, not summed', () => {
    const b = balancesOf([
      fact({ amountKg: 1_000 }),
      fact({ amountKg: null }),
      fact({ kind: 'unknown', amountKg: 5_000 }),
    ]).issuances.get('I1');
    expect(b).toMatchObject({ tokenizedKg: 1_000, approved: 1, unreadable: 2 });
  });

  it('a detokenization leaves the part below a whole tonne as the fraction', () => {
    const b = balancesOf([
      fact({ kind: 'tokenization', amountKg: 10_500 }),
      fact({ kind: 'detokenization', amountKg: 10_000 }),
    ]).issuances.get('I1');
    expect(b).toMatchObject({ outstandingKg: 500, fractionKg: 500 });
    const sums = balancesOf([
      fact({ kind: 'tokenization', amountKg: 0.1 }),
      fact({ kind: 'tokenization', amountKg: 0.2 }),
      fact({ kind: 'retire', amountKg: 0.3 }),
    ]).issuances.get('I1');
    expect(sums).toMatchObject({ tokenizedKg: 0.3, outstandingKg: 0 });
  });

  it('per unit with the issuance of its first operation; operations without ids count nowhere', () => {
    const { issuances, units } = balancesOf([
      fact({ outboxId: 2, unitId: 'U2', issuanceId: 'I9', ref: 'second' }),
      fact({ outboxId: 1, unitId: 'U2', issuanceId: 'I8', ref: 'first' }),
      fact({ outboxId: 3, unitId: null, issuanceId: null }),
    ]);
    expect(units.get('U2')).toMatchObject({
      issuanceId: 'I8',
      balance: { tokenizedKg: 2_000, lastRef: 'second' },
    });
    expect([...issuances.keys()].sort()).toEqual(['I8', 'I9']);
  });

  it('sheets: issuances then units in id order, beside the operator side (never in custody by default)', () => {
    const balances = balancesOf([
      fact({ issuanceId: 'I2', unitId: 'U9' }),
      fact({ issuanceId: 'I1', unitId: 'U1' }),
    ]);
    const sheets = balanceSheets(balances, {
      issuanceAmounts: new Map([['I1', 5_000]]),
      custodyIssuances: new Map([['I1', { state: 'held' }]]),
      custodyUnits: new Map([['U9', { state: 'ended', at: '2026-01-01T00:00:00.000Z' }]]),
      log: new Map([['I1', { operations: 3, retiredKg: 1_000 }]]),
    });
    expect(sheets.map((s) => [s.subject, s.id, s.issuanceAmountKg, s.custody.state, s.log])).toEqual([
      ['issuance', 'I1', 5_000, 'held', { operations: 3, retiredKg: 1_000 }],
      ['issuance', 'I2', null, 'never', { operations: 0, retiredKg: 0 }],
      ['unit', 'U1', null, 'never', null],
      ['unit', 'U9', null, 'ended', null],
    ]);
  });
});
