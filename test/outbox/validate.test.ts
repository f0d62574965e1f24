import { describe, expect, it } from 'vitest';
import { normalizeTimestamp } from '../../src/outbox/timestamp.js';
import { validateNotification, wholeTonnes } from '../../src/outbox/validate.js';
import { detokenization, retire, tokenization, transfer } from './fixtures.js';

function fieldsOf(input: unknown, defaults = {}): string[] {
  const v = validateNotification(input, defaults);
  return v.ok ? [] : v.errors.map((e) => e.field);
}

function reasonFor(input: unknown, field: string): string {
  const v = validateNotification(input);
  if (v.ok) throw new Error('expected errors');
  const e = v.errors.find((x) => x.field === field);
  if (!e) throw new Error(`no error on ${field}: ${JSON.stringify(v.errors)}`);
  return e.reason;
}

describe('validateNotification: valid inputs per operation type', () => {
  const valid: [string, Record<string, unknown>][] = [
    ['Tokenization', tokenization('t-1')],
    ['Transfer with wallets', transfer('t-2')],
    [
      'Transfer with users only',
      { ...transfer('t-3'), originWallet: undefined, destinationWallet: undefined },
    ],
    ['Retire with notes', retire('t-4')],
    ['Retire in kgCO2e', retire('t-5', { transactionAmount: 1500.5, transactionUnit: 'kgCO2e' })],
    ['Detokenization whole tonnes', detokenization('t-6')],
    ['legacy postTransfer', transfer('t-7', { operationType: 'postTransfer' })],
    ['legacy postRetirement', retire('t-8', { operationType: 'POSTRETIREMENT' })],
    ['any case', tokenization('t-9', { operationType: 'tOkEnIzAtIoN' })],
    ['digit-string ids', tokenization('t-10', { unitId: '101', issuanceId: '7' })],
    ['null optional field', tokenization('t-11', { transactionDescription: null })],
  ];
  it.each(valid)('%s is accepted', (_name, input) => {
    const v = validateNotification(JSON.parse(JSON.stringify(input)));
    expect(v.ok, JSON.stringify(v)).toBe(true);
  });

  it('normalizes kind, unit, ids and timestamp and derives the order key', () => {
    const v = validateNotification(
      retire('r', {
        operationType: 'postRetirement',
        transactionUnit: 'KGCO2E',
        unitId: '55',
        transactionTimestamp: '2026-01-02T05:04:05+02:00',
      }),
    );
    if (!v.ok) throw new Error(JSON.stringify(v.errors));
    expect(v.operation.kind).toBe('retire');
    expect(v.operation.notification).toMatchObject({
      unitId: 55,
      transactionUnit: 'kgCO2e',
      transactionTimestamp: '2026-01-02T03:04:05.000Z',
    });
    expect(v.operation.orderKey).toBe('unit:55');
    const byIssuance = validateNotification(tokenization('i', { unitId: undefined }));
    expect(byIssuance.ok && byIssuance.operation.orderKey).toBe('issuance:7');
  });

  it('fills marketplaceId from the configured default, and requires it otherwise', () => {
    const input = tokenization('m', { marketplaceId: undefined });
    expect(fieldsOf(JSON.parse(JSON.stringify(input)), { marketplaceId: 'mkt-default' })).toEqual([]);
    expect(reasonFor(JSON.parse(JSON.stringify(input)), 'marketplaceId')).toMatch(
      /required.*operator.marketplace_id/,
    );
  });
});

describe('validateNotification: invalid inputs name the field', () => {
  const invalid: [string, unknown, string][] = [
    ['not an object', [1, 2], '(body)'],
    ['missing ref', tokenization('x', { marketplaceTransactionRef: undefined }), 'marketplaceTransactionRef'],
    ['empty ref', tokenization(''), 'marketplaceTransactionRef'],
    ['unknown operation', tokenization('x', { operationType: 'Burn' }), 'operationType'],
    ['zero amount', tokenization('x', { transactionAmount: 0 }), 'transactionAmount'],
    ['negative amount', transfer('x', { transactionAmount: -3 }), 'transactionAmount'],
    ['amount as string', tokenization('x', { transactionAmount: '10' }), 'transactionAmount'],
    ['wrong unit', tokenization('x', { transactionUnit: 'tons' }), 'transactionUnit'],
    ['missing unit', tokenization('x', { transactionUnit: undefined }), 'transactionUnit'],
    [
      'date-only timestamp',
      tokenization('x', { transactionTimestamp: '2026-01-02' }),
      'transactionTimestamp',
    ],
    [
      'timestamp without zone',
      tokenization('x', { transactionTimestamp: '2026-01-02T03:04:05' }),
      'transactionTimestamp',
    ],
    [
      'impossible date',
      tokenization('x', { transactionTimestamp: '2026-02-30T00:00:00Z' }),
      'transactionTimestamp',
    ],
    ['fractional unitId', tokenization('x', { unitId: 1.5 }), 'unitId'],
    ['issuanceId text', tokenization('x', { issuanceId: 'seven' }), 'issuanceId'],
    ['wallet as number', transfer('x', { originWallet: 12 }), 'originWallet'],
    [
      'transfer without origin',
      transfer('x', {
        originWallet: undefined,
        originUserName: undefined,
        originUserEmail: undefined,
        originUserDocId: undefined,
      }),
      'originWallet',
    ],
    [
      'transfer without destination',
      transfer('x', {
        destinationWallet: undefined,
        destinationUserName: undefined,
        destinationUserEmail: undefined,
        destinationUserDocId: undefined,
      }),
      'destinationWallet',
    ],
    ['notes on a transfer', transfer('x', { unitsRetirementNotes: 'n' }), 'unitsRetirementNotes'],
    [
      'detokenization without account',
      detokenization('x', { unitsAccountDestinationID: undefined }),
      'unitsAccountDestinationID',
    ],
    ['detokenization fractional', detokenization('x', { transactionAmount: 2.5 }), 'transactionAmount'],
    ['typo field', tokenization('x', { originWalet: '0x' }), 'originWalet'],
  ];
  it.each(invalid)('%s → error on %s', (_name, input, field) => {
    expect(fieldsOf(JSON.parse(JSON.stringify(input)))).toContain(field);
  });

  it('lists every error at once', () => {
    const fields = fieldsOf(tokenization('', { transactionAmount: -1, transactionUnit: 'x', bogus: 1 }));
    expect(fields).toEqual(
      expect.arrayContaining(['marketplaceTransactionRef', 'transactionAmount', 'transactionUnit', 'bogus']),
    );
  });

  it('suggests the field a typo meant', () => {
    expect(reasonFor(tokenization('x', { originWalet: '0x' }), 'originWalet')).toMatch(
      /did you mean originWallet/,
    );
  });

  it('tells a Detokenization in kg the whole tonnes to send and what stays', () => {
    const reason = reasonFor(
      detokenization('x', { transactionAmount: 2345, transactionUnit: 'kgCO2e' }),
      'transactionAmount',
    );
    expect(reason).toMatch(/send transactionAmount 2 with transactionUnit tCO2e/);
    expect(reason).toMatch(/345 kgCO2e stay on the marketplace/);
    expect(
      reasonFor(
        detokenization('x', { transactionAmount: 999, transactionUnit: 'kgCO2e' }),
        'transactionAmount',
      ),
    ).toMatch(/nothing can be detokenized; 999 kgCO2e/);
  });

  it('never quotes a value in a reason', () => {
    const v = validateNotification(transfer('x', { originUserEmail: 42, destinationUserName: ['Bob'] }));
    expect(JSON.stringify(v)).not.toMatch(/Bob|42/);
  });
});

describe('helpers', () => {
  it('wholeTonnes works in grams', () => {
    expect(wholeTonnes(2.5, 'tCO2e')).toEqual({ tonnes: 2, remainderKg: 500 });
    expect(wholeTonnes(1000.1, 'kgCO2e')).toEqual({ tonnes: 1, remainderKg: 0.1 });
  });
  it('normalizeTimestamp', () => {
    expect(normalizeTimestamp('2026-01-02T03:04Z')).toBe('2026-01-02T03:04:00.000Z');
    expect(normalizeTimestamp('2026-01-02T03:04:05.123456Z')).toBe('2026-01-02T03:04:05.123Z');
    expect(normalizeTimestamp('2026-01-02T03:04:05-0130')).toBe('2026-01-02T04:34:05.000Z');
    expect(normalizeTimestamp('2026-01-02T24:00:00Z')).toBeUndefined();
    expect(normalizeTimestamp('yesterday')).toBeUndefined();
  });
});
