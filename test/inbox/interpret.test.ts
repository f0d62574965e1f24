import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { decisionFromWord, interpretPayload } from '../../src/inbox/interpret.js';

const fields = loadConfig({ env: {}, overrides: {} }).webhook.fields;

describe('interpretPayload', () => {
  it('reads the simulator shape: type, ref under data, reason', () => {
    const m = interpretPayload(
      {
        type: 'transaction.rejected',
        data: {
          marketplaceTransactionRef: 'r1',
          transactionReferenceId: 'op-r1',
          status: 'rejected',
          reason: 'no',
        },
      },
      fields,
    );
    expect(m).toEqual({
      type: 'transaction.rejected',
      ref: 'r1',
      decision: 'rejected',
      reason: 'no',
      deposit: null,
    });
  });

  it('prefers a top-level field over data, and falls back through the field list', () => {
    expect(
      interpretPayload(
        { type: 'approved', marketplaceTransactionRef: 'top', data: { marketplaceTransactionRef: 'nested' } },
        fields,
      ).ref,
    ).toBe('top');
    expect(interpretPayload({ type: 'approved', transactionReferenceId: 12 }, fields).ref).toBe('12');
  });

  it('the type decides when it says something; otherwise status does', () => {
    expect(interpretPayload({ type: 'transaction.approved', status: 'rejected' }, fields).decision).toBe(
      'approved',
    );
    expect(
      interpretPayload({ type: 'transaction.updated', data: { status: 'Rejected' } }, fields).decision,
    ).toBe('rejected');
    expect(interpretPayload({ type: 'transaction.updated', status: 'pending' }, fields).decision).toBeNull();
    expect(interpretPayload({}, fields)).toEqual({
      type: null,
      ref: null,
      decision: null,
      reason: null,
      deposit: null,
    });
  });

  it('reads deposit ids as text, scalar or list, de-duplicated, at top level or under data', () => {
    const m = interpretPayload(
      {
        event: 'custody.deposit',
        projectID: 3,
        data: { issuanceId: '44', unitIds: [1, '1', 2, null, { x: 1 }] },
      },
      fields,
    );
    expect(m.decision).toBe('deposit');
    expect(m.deposit).toEqual({ projects: ['3'], issuances: ['44'], units: ['1', '2'] });
  });

  it('ignores values of the wrong type rather than failing', () => {
    const m = interpretPayload(
      { type: ['approved'], marketplaceTransactionRef: { a: 1 }, status: true },
      fields,
    );
    expect(m).toEqual({ type: null, ref: null, decision: null, reason: null, deposit: null });
  });

  it('decisionFromWord', () => {
    expect(decisionFromWord('TRANSACTION_APPROVED')).toBe('approved');
    expect(decisionFromWord('declined')).toBe('rejected');
    expect(decisionFromWord('units.deposited')).toBe('deposit');
    expect(decisionFromWord('ping')).toBeNull();
  });
});
