import type { LedgerFields } from '../operations/ledger.js';
import { type OperationKind, parseOperationKind } from './operationTypes.js';

/**
 * What the reconciliation's ledger keeps of a reported operation (its kind, ids and amount in kg),
 * read from the notification as sent: once, when the operation is queued (prepareInsert.ts), or from
 * a stored body the ledger lacks (reconcile/pass.ts, catchUpLedger). Pure.
 */

export const KG_PER_TONNE = 1000;

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

/** What the ledger keeps of one reported operation. */
export interface LedgerEntry extends LedgerFields {
  kind: OperationKind | 'unknown';
}

const idText = (v: unknown) =>
  typeof v === 'number' && Number.isFinite(v)
    ? String(v)
    : typeof v === 'string' && v.trim() !== ''
      ? v.trim()
      : null;

/** The ledger entry of a notification as sent (the object whose JSON is the outbox body). */
export function ledgerEntryOfNotification(o: Record<string, unknown>): LedgerEntry {
  const kind = typeof o.operationType === 'string' ? parseOperationKind(o.operationType) : undefined;
  return {
    kind: kind ?? 'unknown',
    issuanceId: idText(o.issuanceId),
    unitId: idText(o.unitId),
    amountKg: amountKg(o.transactionAmount, o.transactionUnit),
  };
}

/** The ledger entry of an outbox body (the notification as sent). A body that is not JSON reads as unknown. */
export function ledgerEntryOf(body: string): LedgerEntry {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = null;
  }
  return ledgerEntryOfNotification(
    (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>,
  );
}
