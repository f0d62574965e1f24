/**
 * The simulated operator's books (issue 29): an approved report changes the registry the way an
 * operator's would, so a marketplace reporting consistent operations finds its books matching, and
 * a test or the demo can make them disagree on purpose (a lost retirement, custody dropped).
 *
 *   Tokenization   → its issuanceId and unitId enter custody (custody reads answer 200);
 *   Retire         → a "Retired" operation is appended to the public units log, in tCO2e;
 *   Detokenization → a "Held" operation of the whole tonnes is appended (custody unchanged);
 *   Transfer       → nothing: it stays inside the marketplace.
 *
 * `planBooking` decides (pure); `Books` applies the plan to the registry once per ref, at decision
 * time, whether or not the decision webhook is ever delivered.
 */
import { z } from 'zod';
import type { Clock } from '../common/clock.js';
import type { OperationKind } from '../outbox/operationTypes.js';
import { operationKindOf } from './notify.js';
import type { Registry } from './registry.js';
import type { JsonObject } from './types.js';
import type { Decision } from './webhooks.js';

/** What booking one approved report does to the registry. */
export type BookingPlan =
  | { action: 'custody'; kind: OperationKind; issuances: number[]; units: number[] }
  | { action: 'log'; kind: OperationKind; fields: JsonObject }
  | { action: 'nothing'; kind: OperationKind | undefined; reason: string };

/** A notification's integer id when it can name a registry record (a non-negative safe integer). */
function recordId(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined;
}

/** The reported amount in tCO2e: kgCO2e (any case) is divided by 1000, anything else is tonnes. */
export function tonnesOf(amount: number, unit: unknown): number {
  return typeof unit === 'string' && unit.trim().toLowerCase() === 'kgco2e' ? amount / 1000 : amount;
}

/**
 * Decides what an approved report changes, from the notification alone and the decision's day
 * (YYYY-MM-DD). The fields of a log entry override a synthesized record's (see Books.append).
 */
export function planBooking(n: JsonObject, day: string): BookingPlan {
  const kind = operationKindOf(n.operationType);
  if (kind === undefined) return { action: 'nothing', kind, reason: 'unknown operationType' };
  if (kind === 'transfer') return { action: 'nothing', kind, reason: 'a transfer stays in the marketplace' };
  const issuance = recordId(n.issuanceId);
  const unit = recordId(n.unitId);
  if (kind === 'tokenization') {
    if (issuance === undefined && unit === undefined)
      return { action: 'nothing', kind, reason: 'no issuanceId or unitId to put in custody' };
    return {
      action: 'custody',
      kind,
      issuances: issuance === undefined ? [] : [issuance],
      units: unit === undefined ? [] : [unit],
    };
  }
  if (issuance === undefined) return { action: 'nothing', kind, reason: 'no issuanceId to log against' };
  const amount = typeof n.transactionAmount === 'number' ? n.transactionAmount : 0;
  const common: JsonObject = {
    unitsIssuanceID: String(issuance),
    unitsDate: day,
    ...(typeof n.marketplaceId === 'string' &&
      n.marketplaceId !== '' && { unitsMarketplaceID: n.marketplaceId }),
  };
  if (kind === 'retire') {
    const origin = recordId(n.unitsInternalAccountID);
    return {
      action: 'log',
      kind,
      fields: {
        ...common,
        unitsStatus: 'Retired',
        unitsQuantity: tonnesOf(amount, n.transactionUnit),
        unitsRetirementNotes: typeof n.unitsRetirementNotes === 'string' ? n.unitsRetirementNotes : '',
        ...(origin !== undefined && { unitsAccountOriginID: origin }),
      },
    };
  }
  const destination = recordId(n.unitsAccountDestinationID);
  return {
    action: 'log',
    kind,
    fields: {
      ...common,
      unitsStatus: 'Held',
      // Detokenization re-tokenizes whole tonnes only (the /notify check already insists on them).
      unitsQuantity: Math.floor(tonnesOf(amount, n.transactionUnit)),
      unitsRetirementNotes: '',
      ...(destination !== undefined && { unitsAccountDestinationID: destination }),
    },
  };
}

const idSchema = z.union([
  z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  z.string().regex(/^\d{1,15}$/, 'must be a digit string'),
]);

/** POST /_sim/books: faults on the books and the switch, each optional. */
export const booksPatchSchema = z.strictObject({
  /** The next n approved retirements are not logged (added to those still pending). */
  loseRetirements: z.number().int().nonnegative().optional(),
  /** These ids leave custody now: their custody reads answer 404 from then on. */
  dropCustody: z
    .strictObject({ issuances: z.array(idSchema).optional(), units: z.array(idSchema).optional() })
    .optional(),
  /** Bookkeeping on or off (on when the simulator starts). */
  keepBooks: z.boolean().optional(),
});
export type BooksPatch = z.infer<typeof booksPatchSchema>;

/** How many ids and refs the books' view keeps (the latest): a long run's view stays small. */
export const BOOKS_VIEW_LIMIT = 1000;

export interface BooksView {
  keepBooks: boolean;
  /** Approved reports booked, per operation kind (a lost retirement counts as booked). */
  booked: Record<OperationKind, number>;
  /** Unit operation ids appended to the public log, the latest BOOKS_VIEW_LIMIT, oldest first. */
  appended: string[];
  appendedTotal: number;
  /** Refs of the retirements lost on purpose, the latest BOOKS_VIEW_LIMIT. */
  lost: string[];
  lostTotal: number;
  /** Approved reports the books could not apply (no ids), the latest BOOKS_VIEW_LIMIT. */
  skipped: { ref: string; reason: string }[];
  pending: { loseRetirements: number };
}

/** What one call of `Books.onDecided` did. */
export type BookingOutcome =
  | { done: 'custody'; ref: string; issuances: number[]; units: number[] }
  | { done: 'appended'; ref: string; unitsOperationID: string }
  | { done: 'lost'; ref: string }
  | { done: 'nothing'; ref: string; reason: string };

function pushBounded<T>(list: T[], item: T): void {
  list.push(item);
  if (list.length > BOOKS_VIEW_LIMIT) list.splice(0, list.length - BOOKS_VIEW_LIMIT);
}

export class Books {
  private keep = true;
  private loseNext = 0;
  /** Refs already booked: a duplicate report changes nothing twice. */
  private readonly booked = new Set<string>();
  private readonly counts: Record<OperationKind, number> = {
    tokenization: 0,
    transfer: 0,
    retire: 0,
    detokenization: 0,
  };
  private readonly appended: string[] = [];
  private appendedTotal = 0;
  private readonly lost: string[] = [];
  private lostTotal = 0;
  private readonly skipped: { ref: string; reason: string }[] = [];

  constructor(
    private readonly registry: Registry,
    private readonly clock: Clock,
  ) {}

  /**
   * Books a decided report (a validated /notify body): only an approval changes anything, once
   * per ref, and nothing while the bookkeeping is off.
   */
  onDecided(notification: JsonObject, decision: Decision): BookingOutcome | undefined {
    const ref = String(notification.marketplaceTransactionRef);
    if (decision !== 'approve' || !this.keep || this.booked.has(ref)) return undefined;
    this.booked.add(ref);
    const plan = planBooking(notification, new Date(this.clock.now()).toISOString().slice(0, 10));
    if (plan.kind !== undefined) this.counts[plan.kind]++;
    if (plan.action === 'nothing') {
      if (plan.kind !== 'transfer') pushBounded(this.skipped, { ref, reason: plan.reason });
      return { done: 'nothing', ref, reason: plan.reason };
    }
    if (plan.action === 'custody') {
      this.registry.addToCustody('issuances', plan.issuances);
      this.registry.addToCustody('units', plan.units);
      return { done: 'custody', ref, issuances: plan.issuances, units: plan.units };
    }
    if (plan.kind === 'retire' && this.loseNext > 0) {
      this.loseNext--;
      this.lostTotal++;
      pushBounded(this.lost, ref);
      return { done: 'lost', ref };
    }
    return { done: 'appended', ref, unitsOperationID: this.append(plan.fields) };
  }

  /** Appends one operation at the end of the log: a plausible record (ids above every other) with `fields` over it. */
  private append(fields: JsonObject): string {
    const { lastId } = this.registry.appendUnits(1);
    const id = String(lastId);
    this.registry.change('units', id, fields);
    this.appendedTotal++;
    pushBounded(this.appended, id);
    return id;
  }

  /** The next n approved retirements are not logged (the operator lost them); adds to those pending. */
  loseRetirements(n: number): void {
    if (!Number.isSafeInteger(n) || n < 0)
      throw new RangeError('loseRetirements: n must be a non-negative integer');
    this.loseNext += n;
  }

  /** These ids leave custody now (custody reads answer 404 from now on). */
  dropCustody(ids: { issuances?: readonly (string | number)[]; units?: readonly (string | number)[] }): void {
    if (ids.issuances) this.registry.removeFromCustody('issuances', ids.issuances);
    if (ids.units) this.registry.removeFromCustody('units', ids.units);
  }

  /** Turns the bookkeeping on or off; an approval decided while off is not booked (a duplicate of it reported once back on is). */
  setKeepBooks(on: boolean): void {
    this.keep = on;
  }

  /** Applies a validated POST /_sim/books body (faults first, then the switch) and returns the view. */
  apply(patch: BooksPatch): BooksView {
    if (patch.loseRetirements !== undefined) this.loseRetirements(patch.loseRetirements);
    if (patch.dropCustody) this.dropCustody(patch.dropCustody);
    if (patch.keepBooks !== undefined) this.setKeepBooks(patch.keepBooks);
    return this.view();
  }

  view(): BooksView {
    return {
      keepBooks: this.keep,
      booked: { ...this.counts },
      appended: [...this.appended],
      appendedTotal: this.appendedTotal,
      lost: [...this.lost],
      lostTotal: this.lostTotal,
      skipped: [...this.skipped],
      pending: { loseRetirements: this.loseNext },
    };
  }
}
