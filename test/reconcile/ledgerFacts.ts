import type { LedgerFact } from '../../src/reconcile/balances.js';

/** Ledger facts for the pure rules' tests. */

let nextId = 1;
/** An approved operation of `kg` on issuance I1 and unit U1 (fields as given). */
export const fact = (over: Partial<LedgerFact>): LedgerFact => {
  const id = nextId++;
  return {
    outboxId: id,
    kind: 'tokenization',
    issuanceId: 'I1',
    unitId: 'U1',
    amountKg: 1000,
    state: 'approved',
    ref: `ref-${id}`,
    createdAt: '2026-03-01T00:00:00.000Z',
    acceptedAt: '2026-03-01T00:00:00.000Z',
    decidedAt: '2026-03-01T00:00:00.000Z',
    ...over,
  };
};
