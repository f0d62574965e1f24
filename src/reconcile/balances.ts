import { grams } from '../outbox/ledgerEntry.js';
import type { OperationKind } from '../outbox/operationTypes.js';
import { belowTonne } from './amounts.js';
import type { Balance, BalanceSheet, CustodyState } from './findingKinds.js';

/**
 * The balances: what the marketplace reported on each issuance and unit, from the operations the
 * operator approved, in kg. Pure.
 */

/** One reported operation as a pass reads it: its ledger entry and its outbox row's state. */
export interface LedgerFact {
  outboxId: number;
  kind: OperationKind | 'unknown';
  issuanceId: string | null;
  unitId: string | null;
  amountKg: number | null;
  state: string;
  ref: string;
  createdAt: string;
  acceptedAt: string | null;
  decidedAt: string | null;
}

/** States whose operation is reported and may still be approved: counted as awaiting. */
const AWAITING = new Set(['queued', 'sending', 'accepted']);

export const emptyBalance = (): Balance => ({
  tokenizedKg: 0,
  transferredKg: 0,
  retiredKg: 0,
  detokenizedKg: 0,
  outstandingKg: 0,
  fractionKg: 0,
  approved: 0,
  awaiting: 0,
  unreadable: 0,
  lastRef: null,
});

/** Adds one operation to a balance (mutates it; `finish` settles the derived figures). */
function add(balance: Balance, fact: LedgerFact): void {
  balance.lastRef = fact.ref;
  if (AWAITING.has(fact.state)) {
    balance.awaiting++;
    return;
  }
  if (fact.state !== 'approved') return;
  if (fact.amountKg === null || fact.kind === 'unknown') {
    balance.unreadable++;
    return;
  }
  balance.approved++;
  if (fact.kind === 'tokenization') balance.tokenizedKg += fact.amountKg;
  else if (fact.kind === 'transfer') balance.transferredKg += fact.amountKg;
  else if (fact.kind === 'retire') balance.retiredKg += fact.amountKg;
  else balance.detokenizedKg += fact.amountKg;
}

function finish(balance: Balance): Balance {
  balance.tokenizedKg = grams(balance.tokenizedKg);
  balance.transferredKg = grams(balance.transferredKg);
  balance.retiredKg = grams(balance.retiredKg);
  balance.detokenizedKg = grams(balance.detokenizedKg);
  balance.outstandingKg = grams(balance.tokenizedKg - balance.retiredKg - balance.detokenizedKg);
  balance.fractionKg = belowTonne(balance.outstandingKg);
  return balance;
}

/** Balances per issuance and per unit (with the unit's issuance: that of its first operation). */
export interface Balances {
  issuances: Map<string, Balance>;
  units: Map<string, { issuanceId: string | null; balance: Balance }>;
}

/** The balances of these operations, in id order (so `lastRef` is the latest reported). */
export function balancesOf(facts: readonly LedgerFact[]): Balances {
  const issuances = new Map<string, Balance>();
  const units = new Map<string, { issuanceId: string | null; balance: Balance }>();
  const ordered = [...facts].sort((a, b) => a.outboxId - b.outboxId);
  for (const fact of ordered) {
    if (fact.issuanceId !== null) {
      const b = issuances.get(fact.issuanceId) ?? emptyBalance();
      issuances.set(fact.issuanceId, b);
      add(b, fact);
    }
    if (fact.unitId !== null) {
      const u = units.get(fact.unitId) ?? { issuanceId: fact.issuanceId, balance: emptyBalance() };
      units.set(fact.unitId, u);
      add(u.balance, fact);
    }
  }
  for (const b of issuances.values()) finish(b);
  for (const u of units.values()) finish(u.balance);
  return { issuances, units };
}

/** What the operator shows, as a pass or a read gathered it. */
export interface OperatorSide {
  /** `issuanceAmount` in kg, by issuance id. */
  issuanceAmounts: ReadonlyMap<string, number>;
  custodyIssuances: ReadonlyMap<string, CustodyState>;
  custodyUnits: ReadonlyMap<string, CustodyState>;
  /** The public log per issuance (for sheets only; empty in a pass). */
  log: ReadonlyMap<string, { operations: number; retiredKg: number }>;
}

const NEVER: CustodyState = { state: 'never' };

/** The issuance sheets, then the unit sheets, each in id order. */
export function balanceSheets(balances: Balances, side: OperatorSide): BalanceSheet[] {
  const sheets: BalanceSheet[] = [];
  for (const [id, balance] of [...balances.issuances].sort(byId)) {
    sheets.push({
      subject: 'issuance',
      id,
      issuanceId: id,
      balance,
      issuanceAmountKg: side.issuanceAmounts.get(id) ?? null,
      custody: side.custodyIssuances.get(id) ?? NEVER,
      log: side.log.get(id) ?? { operations: 0, retiredKg: 0 },
    });
  }
  for (const [id, unit] of [...balances.units].sort(byId)) {
    sheets.push({
      subject: 'unit',
      id,
      issuanceId: unit.issuanceId,
      balance: unit.balance,
      issuanceAmountKg: null,
      custody: side.custodyUnits.get(id) ?? NEVER,
      log: null,
    });
  }
  return sheets;
}

const byId = (a: [string, unknown], b: [string, unknown]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
