import { amountKg, grams, KG_PER_TONNE } from '../outbox/ledgerEntry.js';

/**
 * Amounts in kg: the interface reports `tCO2e` and `kgCO2e` (Part B; read by ../outbox/ledgerEntry.ts),
 * the issuances and the units log count tonnes. Kept to the gram so that sums of kg and of tonnes
 * compare exactly. Pure.
 */

/** Two amounts closer than this (kg) are equal: half a gram, below any unit the interface reports. */
export const KG_EPSILON = 0.0005;

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
