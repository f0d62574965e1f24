/**
 * The demo's operations (pure): a stream that keeps consistent books on records the simulator has,
 * and the four inconsistencies injected once halfway, each on a record of its own so that its
 * finding names it and nothing else. The people are made up (the demo's own data, never real).
 * Refs starting `reject-` are rejected by the simulator, so the demo shows a rejection too.
 */

/** An issuance of the simulator with one of its units (a unit operation naming it) and its amount. */
export interface DemoPair {
  issuanceId: number;
  unitId: number;
  /** The issuance's `issuanceAmount`, tCO2e. */
  amountT: number;
}

/** Which records the stream and each injected inconsistency use (all distinct). */
export interface DemoPlan {
  /**
   * The steady stream's, the largest issuances: at most MAX_TOKENIZED_T per cycle, so a stream of
   * days stays far within their amounts (hundreds of thousands of tonnes).
   */
  stream: DemoPair[];
  /** A Retire the operator approves and leaves out of its public log. */
  lost: DemoPair;
  /** A Retire of more than was tokenized on the issuance (reported without a unit). */
  beyond: DemoPair;
  /** The smallest issuance: one Tokenization of most of it, reported twice under two refs. */
  doubled: DemoPair;
  /** Custody dropped by the operator, then a Transfer reported on it. */
  dropped: DemoPair;
}

/** Pairs the steady stream cycles through. */
export const STREAM_PAIRS = 4;
/** Operations per cycle on one pair: Tokenization, Transfer, Retire, Detokenization. */
const CYCLE = 4;
/** A cycle's Tokenization, tCO2e: from 10 to 18 (the most a pair's issuance takes per cycle). */
const MIN_TOKENIZED_T = 10;
const MAX_TOKENIZED_T = 18;
/** What the set-up tokenizes on the lost, beyond and dropped pairs, tCO2e. */
export const SETUP_TOKENIZED_T = 10;
/**
 * The lost retirement's quantity, tCO2e: a quarter tonne, which no generated log entry has (the
 * simulator's are whole or half tonnes), so only its own booking could match it.
 */
export const LOST_RETIRE_T = 4.25;
/** The retire beyond what was tokenized on `beyond`, tCO2e (SETUP_TOKENIZED_T was). */
export const BEYOND_RETIRE_T = 15;

/**
 * The plan from the candidates (pure): the smallest issuance is doubled, the largest carry the
 * stream, and the first others in id order take the lost retirement, the retire beyond and the
 * dropped custody. Needs STREAM_PAIRS + 4 candidates with distinct issuances.
 */
export function planDemo(candidates: readonly DemoPair[]): DemoPlan {
  const distinct = [...new Map(candidates.map((c) => [c.issuanceId, c])).values()];
  if (distinct.length < STREAM_PAIRS + 4)
    throw new Error(`the demo needs ${STREAM_PAIRS + 4} issuances with a unit, found ${distinct.length}`);
  const byAmount = [...distinct].sort((a, b) => a.amountT - b.amountT || a.issuanceId - b.issuanceId);
  const doubled = byAmount[0] as DemoPair;
  const stream = byAmount.slice(-STREAM_PAIRS).reverse();
  const taken = new Set([doubled, ...stream].map((p) => p.issuanceId));
  const [lost, beyond, dropped] = distinct
    .filter((p) => !taken.has(p.issuanceId))
    .sort((a, b) => a.issuanceId - b.issuanceId) as [DemoPair, DemoPair, DemoPair];
  return { stream, lost, beyond, doubled, dropped };
}

/** Every pair of the plan: the operator deposits them all into custody before the stream starts. */
export const planPairs = (plan: DemoPlan): DemoPair[] => [
  ...plan.stream,
  plan.lost,
  plan.beyond,
  plan.doubled,
  plan.dropped,
];

type Body = Record<string, unknown>;

/** A stream on the simulator's first issuance and unit, for a sample notification outside the demo. */
const SAMPLE_PLAN: Pick<DemoPlan, 'stream'> = {
  stream: [{ issuanceId: 100_000, unitId: 1_000_000_000, amountT: 1000 }],
};

/** The fields every operation on a pair carries; the ref is unique per run (the time) and operation. */
function common(pair: DemoPair, marketplaceId: string, now: Date, ref: string): Body {
  return {
    marketplaceId,
    issuanceId: pair.issuanceId,
    unitId: pair.unitId,
    transactionTimestamp: now.toISOString(),
    marketplaceTransactionRef: `${ref}-${now.getTime().toString(36)}`,
  };
}

const tokenization = (amountT: number): Body => ({
  operationType: 'Tokenization',
  transactionAmount: amountT,
  transactionUnit: 'tCO2e',
});

const transfer = (n: number, amountT: number): Body => ({
  operationType: 'transfer',
  transactionAmount: amountT,
  transactionUnit: 'tCO2e',
  transactionUnitPrice: '14.20',
  originWallet: `0xdemo-origin-${n}`,
  originUserName: 'Demo Origin',
  originUserEmail: 'origin@demo.invalid',
  destinationWallet: `0xdemo-destination-${n}`,
  destinationUserName: 'Demo Destination',
  destinationUserEmail: 'destination@demo.invalid',
});

const retire = (amount: number, unit: 'tCO2e' | 'kgCO2e'): Body => ({
  operationType: 'Retire',
  transactionAmount: amount,
  transactionUnit: unit,
  unitsRetirementNotes: 'Demo retirement on behalf of a customer',
});

/**
 * Operation n of the steady stream. Cycle c = n / 4 runs on pair c mod STREAM_PAIRS: a
 * Tokenization of 10 to 18 t, a Transfer of 2.5 t (rejected every third cycle), a Retire of 750 kg
 * (the log books 0.75 t) and a Detokenization of 3 t. Each cycle retires and detokenizes less than
 * it tokenized, so no pair's outstanding amount ever goes below zero, whatever the interleaving of
 * cycles; a rejected Transfer changes no balance.
 */
export function demoOperation(
  n: number,
  marketplaceId: string,
  now: Date,
  plan: Pick<DemoPlan, 'stream'> = SAMPLE_PLAN,
): Body {
  const cycle = Math.floor(n / CYCLE);
  const pair = plan.stream[cycle % plan.stream.length] as DemoPair;
  switch (n % CYCLE) {
    case 0:
      return {
        ...common(pair, marketplaceId, now, `demo-${n}`),
        ...tokenization(MIN_TOKENIZED_T + (cycle % (MAX_TOKENIZED_T - MIN_TOKENIZED_T + 1))),
      };
    case 1: {
      const prefix = cycle % 3 === 2 ? 'reject-' : '';
      return { ...common(pair, marketplaceId, now, `${prefix}demo-${n}`), ...transfer(n, 2.5) };
    }
    case 2:
      return { ...common(pair, marketplaceId, now, `demo-${n}`), ...retire(750, 'kgCO2e') };
    default:
      return {
        ...common(pair, marketplaceId, now, `demo-${n}`),
        operationType: 'Detokenization',
        transactionAmount: 3,
        transactionUnit: 'tCO2e',
        unitsAccountDestinationID: 4242,
      };
  }
}

/** Before the stream: the lost, beyond and dropped pairs are tokenized, so their later operations are consistent but for the injected fault. */
export function setupOperations(plan: DemoPlan, marketplaceId: string, now: Date): Body[] {
  return (['lost', 'beyond', 'dropped'] as const).map((role) => ({
    ...common(plan[role], marketplaceId, now, `demo-setup-${role}`),
    ...tokenization(SETUP_TOKENIZED_T),
  }));
}

/** The Retire whose retirement the operator is told to lose. */
export const lostRetirement = (plan: DemoPlan, marketplaceId: string, now: Date): Body => ({
  ...common(plan.lost, marketplaceId, now, 'demo-lost'),
  ...retire(LOST_RETIRE_T, 'tCO2e'),
});

/** A Retire of more than the issuance had tokenized, on the issuance alone (its unit's books stay whole). */
export function retireBeyond(plan: DemoPlan, marketplaceId: string, now: Date): Body {
  const { unitId: _unit, ...onIssuance } = common(plan.beyond, marketplaceId, now, 'demo-beyond');
  return { ...onIssuance, ...retire(BEYOND_RETIRE_T, 'tCO2e') };
}

/**
 * One Tokenization reported twice under two refs: each within the issuance's amount (60 % of it,
 * whole tonnes rounded up), both together beyond it.
 */
export function doubleTokenization(plan: DemoPlan, marketplaceId: string, now: Date): Body[] {
  const amountT = Math.ceil(plan.doubled.amountT * 0.6);
  return ['a', 'b'].map((copy) => ({
    ...common(plan.doubled, marketplaceId, now, `demo-double-${copy}`),
    ...tokenization(amountT),
  }));
}

/** A Transfer on the issuance whose custody the operator dropped (reported after the drop was read). */
export const transferAfterDrop = (plan: DemoPlan, marketplaceId: string, now: Date): Body => ({
  ...common(plan.dropped, marketplaceId, now, 'demo-after-drop'),
  ...transfer(0, 1),
});
