import { type OperationKind, parseOperationKind } from '../outbox/operationTypes.js';

/**
 * Amounts in kg: the interface reports `tCO2e` and `kgCO2e` (Part B), the issuances and the units
 * log count tonnes. Kept to the gram so that sums of kg and of tonnes compare exactly. Pure.
 */

const KG_PER_TONNE = 1000;
/** Two amounts closer than this (kg) are equal: half a gram, below any unit the interface reports. */
export const KG_EPSILON = 0.0005;

/** Rounded to the gram. */
export const grams = (kg: number) => Math.round(kg * 1000) / 1000;

/** A reported amount in kg: `tCO2e` (also when no unit is given, as the interface shows it) or `kgCO2e`; null when unreadable. */
export function amountKg(amount: unknown, unit: unknown): number | null {
  const value = typeof amount === 'string' && amount.trim() !== '' ? Number(amount) : amount;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) return null;
  const spelled = unit === undefined || unit === null ? 'tco2e' : String(unit).trim().toLowerCase();
  if (spelled === 'tco2e' || spelled === 't') return grams(value * KG_PER_TONNE);
  if (spelled === 'kgco2e' || spelled === 'kg') return grams(value);
  return null;
}

/** Tonnes (the issuances' and the log's unit) in kg; null when not a number. */
export function tonnesKg(tonnes: unknown): number | null {
  return amountKg(tonnes, 'tCO2e');
}

/** An amount for a sentence: `12.5 t` (tonnes, to the gram). */
export function tonnes(kg: number): string {
  return `${grams(kg / KG_PER_TONNE)} t`;
}

/** The part of `kg` below a whole tonne (what detokenization cannot take). */
export function belowTonne(kg: number): number {
  return kg > 0 ? grams(kg % KG_PER_TONNE) : 0;
}

/** What the ledger keeps of one reported operation, read from its body once. */
export interface LedgerEntry {
  kind: OperationKind | 'unknown';
  issuanceId: string | null;
  unitId: string | null;
  amountKg: number | null;
}

const idText = (v: unknown) =>
  typeof v === 'number' && Number.isFinite(v)
    ? String(v)
    : typeof v === 'string' && v.trim() !== ''
      ? v.trim()
      : null;

/** The ledger entry of an outbox body (the notification as sent). A body that is not JSON reads as unknown. */
export function ledgerEntryOf(body: string): LedgerEntry {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = null;
  }
  const o = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  const kind = typeof o.operationType === 'string' ? parseOperationKind(o.operationType) : undefined;
  return {
    kind: kind ?? 'unknown',
    issuanceId: idText(o.issuanceId),
    unitId: idText(o.unitId),
    amountKg: amountKg(o.transactionAmount, o.transactionUnit),
  };
}
