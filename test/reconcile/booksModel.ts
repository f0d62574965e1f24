import fc from 'fast-check';

/**
 * The property tests' model of consistent books (property.test.ts): the operator's issuances with
 * their amounts, and what the marketplace may report on each without the two disagreeing. A
 * command is drawn as fractions of what the model allows at that moment, so every sequence stays
 * consistent whatever fast-check draws or shrinks; the injected faults break exactly one rule.
 */

/** One issuance's books, in kg (integers: every amount drawn is whole kg). */
export interface IssuanceBook {
  id: string;
  unit: string;
  amountKg: number;
  tokenizedKg: number;
  /** Whole tonnes detokenizations gave back (tokenizable again). */
  givenBackKg: number;
  outstandingKg: number;
  lastTokenizedKg: number;
}

export const available = (b: IssuanceBook) => b.amountKg - b.tokenizedKg + b.givenBackKg;

export type OperationType = 'Tokenization' | 'Transfer' | 'Retire' | 'Detokenization';

/** A command as drawn: which issuance, and how much of what the model allows (0..1). */
export type Command = Booked | Unbooked;
interface Booked {
  op: 'tokenize' | 'transfer' | 'retire' | 'detokenize';
  at: number;
  share: number;
  inKg: boolean;
}
/** Rejected, or reported last and never sent: any type and amount, whatever the books say. */
interface Unbooked {
  op: 'rejected' | 'pending';
  at: number;
  type: OperationType;
  amountT: number;
}
const unbooked = (c: Command): c is Unbooked => c.op === 'rejected' || c.op === 'pending';

export type Fault = 'double-tokenization' | 'lost-retirement' | 'custody-dropped' | 'retire-beyond';
export const FAULTS: readonly Fault[] = [
  'double-tokenization',
  'lost-retirement',
  'custody-dropped',
  'retire-beyond',
];

const TYPES: readonly OperationType[] = ['Tokenization', 'Transfer', 'Retire', 'Detokenization'];
/** Often all of it: an issuance tokenized to its amount, detokenized, then tokenized again. */
const share = fc.oneof(fc.constant(1), fc.double({ min: 0, max: 1, noNaN: true }));

export const commandArb: fc.Arbitrary<Command> = fc.oneof(
  {
    arbitrary: fc.record({
      op: fc.constantFrom('tokenize', 'transfer', 'retire', 'detokenize' as const),
      at: fc.nat(),
      share,
      inKg: fc.boolean(),
    }),
    weight: 5,
  },
  {
    arbitrary: fc.record({
      op: fc.constantFrom('rejected', 'pending' as const),
      at: fc.nat(),
      type: fc.constantFrom(...TYPES),
      amountT: fc.integer({ min: 1, max: 100_000 }),
    }),
    weight: 1,
  },
);

/** Issuance amounts in whole tonnes: small, so tokenizations often use all of one up. */
export const amountsArb = fc.array(fc.integer({ min: 1, max: 20 }), { minLength: 1, maxLength: 3 });

/** An operation to report, decided as `decision` (pending: reported last and never sent). */
export interface Step {
  ref: string;
  type: OperationType;
  issuance: IssuanceBook;
  /** `transactionAmount` and `transactionUnit` as reported, and that amount in kg. */
  amount: number;
  kg: number;
  unit: 'tCO2e' | 'kgCO2e';
  decision: 'approved' | 'rejected' | 'pending';
  /** An approved Retire the operator's log shows (false: it lost it). */
  logged: boolean;
}

/** `kg` as reported: in kgCO2e, or in tCO2e (whole grams always: kg are integers). */
const reported = (kg: number, inKg: boolean) =>
  inKg ? { amount: kg, unit: 'kgCO2e' as const, kg } : { amount: kg / 1000, unit: 'tCO2e' as const, kg };

/** How the marketplace reports. */
export interface ModelOptions {
  /** Detokenizations in whole tonnes only, as vcu-sync's validation insists (default: any kg). */
  wholeDetokenizations?: boolean;
}

/** The kg a command takes, or 0 when the model allows nothing now. */
function kgOf(b: IssuanceBook, op: Booked['op'], s: number, options: ModelOptions): number {
  if (op === 'tokenize') return Math.floor(s * available(b));
  if (op === 'detokenize' && options.wholeDetokenizations)
    return Math.floor((s * b.outstandingKg) / 1000) * 1000;
  return Math.floor(s * b.outstandingKg);
}

/** Applies an approved operation of `kg` to the books. */
function book(b: IssuanceBook, type: OperationType, kg: number): void {
  if (type === 'Tokenization') {
    b.tokenizedKg += kg;
    b.outstandingKg += kg;
    b.lastTokenizedKg = kg;
  } else if (type === 'Retire') b.outstandingKg -= kg;
  else if (type === 'Detokenization') {
    b.outstandingKg -= kg;
    b.givenBackKg += Math.floor(kg / 1000) * 1000;
  }
}

const TYPE_OF = {
  tokenize: 'Tokenization',
  transfer: 'Transfer',
  retire: 'Retire',
  detokenize: 'Detokenization',
} as const;

/**
 * The steps of `commands` on books of `amountsT`, each consistent when it is taken; pending ones
 * last, and only on issuances the marketplace tokenized (it holds nothing else). Refs say the
 * decision: `op-` approved, `reject-` rejected (the simulator's rule), `pending-` never sent.
 */
export function stepsOf(
  amountsT: readonly number[],
  commands: readonly Command[],
  options: ModelOptions = {},
) {
  const books: IssuanceBook[] = amountsT.map((t, i) => ({
    id: `I${i}`,
    unit: `U${i}`,
    amountKg: t * 1000,
    tokenizedKg: 0,
    givenBackKg: 0,
    outstandingKg: 0,
    lastTokenizedKg: 0,
  }));
  const steps: Step[] = [];
  const pending: Step[] = [];
  for (const c of commands) {
    const b = books[c.at % books.length] as IssuanceBook;
    const n = steps.length + pending.length;
    if (unbooked(c)) {
      const step = { type: c.type, issuance: b, ...reported(c.amountT * 1000, false), logged: false };
      if (c.op === 'rejected') steps.push({ ...step, ref: `reject-${n}`, decision: 'rejected' });
      else if (b.tokenizedKg > 0) pending.push({ ...step, ref: `pending-${n}`, decision: 'pending' });
      continue;
    }
    const ref = `op-${n}`;
    const kg = kgOf(b, c.op, c.share, options);
    if (kg < 1) continue;
    const type = TYPE_OF[c.op];
    const inKg = c.inKg && !(type === 'Detokenization' && options.wholeDetokenizations);
    book(b, type, kg);
    steps.push({
      ref,
      type,
      issuance: b,
      ...reported(kg, inKg),
      decision: 'approved',
      logged: type === 'Retire',
    });
  }
  return { books, steps, pending };
}

/** What a fault adds, and the findings it must raise (as `kind subject id`, sorted). */
export interface Injection {
  steps: Step[];
  /** The issuance whose custody the operator drops. */
  dropped: IssuanceBook | null;
  expected: string[];
}

/**
 * The fault on the book at `at` (or, when none has tokens or room left, on a fresh issuance with
 * some tokenized): the steps that make it and the one finding that names it.
 */
export function inject(fault: Fault, books: IssuanceBook[], at: number, next: number): Injection {
  const steps: Step[] = [];
  const step = (b: IssuanceBook, type: OperationType, kg: number, logged: boolean) => {
    book(b, type, kg);
    const s: Step = {
      ref: `fault-${next + steps.length}`,
      type,
      issuance: b,
      ...reported(kg, true),
      decision: 'approved',
      logged,
    };
    steps.push(s);
    return s;
  };
  let b = books[at % books.length] as IssuanceBook;
  if (fault !== 'double-tokenization' && b.outstandingKg < 1) {
    if (available(b) < 1) {
      b = {
        id: 'IX',
        unit: 'UX',
        amountKg: 10_000,
        tokenizedKg: 0,
        givenBackKg: 0,
        outstandingKg: 0,
        lastTokenizedKg: 0,
      };
      books.push(b);
    }
    step(b, 'Tokenization', Math.max(1, Math.floor(available(b) / 2)), false);
  }
  if (fault === 'double-tokenization') {
    step(b, 'Tokenization', available(b) + (b.lastTokenizedKg || 1000), false);
    return { steps, dropped: null, expected: [`over-issuance issuance ${b.id}`] };
  }
  if (fault === 'lost-retirement') {
    const lost = step(b, 'Retire', Math.max(1, Math.floor(b.outstandingKg / 3)), false);
    return { steps, dropped: null, expected: [`retirement-missing operation ${lost.ref}`] };
  }
  if (fault === 'custody-dropped')
    return { steps, dropped: b, expected: [`not-in-custody issuance ${b.id}`] };
  step(b, 'Retire', b.outstandingKg + 1 + (next % 999), true);
  return {
    steps,
    dropped: null,
    expected: [`outstanding-negative issuance ${b.id}`, `outstanding-negative unit ${b.unit}`],
  };
}
