import type { ReconcileSize } from './reconcileSeed.js';

/** The reconciliation bench's books at the size its tests seed, and what a full pass must find in them. */

/** 200 custody units (800 operations) over 20 issuances: issuance i holds units i, i+20, ..., i+180. */
export const TINY: ReconcileSize = { log: 2_000, issuances: 20, outbox: 800 };

/**
 * Units 1 and 101 lose their retirement, 3 and 103 retire 12 t of 10 (issuance 3 stays positive:
 * 100 t tokenized, 56 retired, 30 detokenized), 4 and 104 are not in custody, 5 and 105 have a
 * Detokenization accepted and never decided; issuance 3 shows 5 t (10 units tokenized); one unit is
 * deposited and never tokenized.
 */
export const TINY_FINDINGS = {
  'outstanding-negative': 2,
  'over-issuance': 1,
  'not-in-custody': 2,
  'retirement-missing': 2,
  'decision-overdue': 2,
  'deposit-not-tokenized': 1,
};
