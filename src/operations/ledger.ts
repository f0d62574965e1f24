import { join, sql } from '../store/sql.js';

/**
 * The reconciliation's ledger (table `reconciliation_ledger`): what each outbox row reports, its
 * kind, ids and amount in kg, read from its notification once. Written beside the outbox row when
 * the operation is queued (transitions.ts, insertOperations), or later from the stored body by the
 * reconciler's catch-up (reconcile/pass.ts) for a row queued without it. Bodies never change: an
 * entry, once written, stands.
 */

/** An operation's ledger entry, as the outbox reads it from the notification (outbox/ledgerEntry.ts). */
export interface LedgerFields {
  /** The operation kind (tokenization, transfer, retire, detokenization) or `unknown`. */
  kind: string;
  issuanceId: string | null;
  unitId: string | null;
  amountKg: number | null;
}

/** An entry with the outbox row it is of. */
export interface LedgerInsert extends LedgerFields {
  outboxId: number;
}

/** Inserts entries (a row already there stays as it is). */
export const insertLedger = (rows: readonly LedgerInsert[]) =>
  sql`INSERT INTO reconciliation_ledger (outbox_id, kind, issuance_id, unit_id, amount_kg)
      VALUES ${join(
        rows.map((r) => sql`(${r.outboxId}, ${r.kind}, ${r.issuanceId}, ${r.unitId}, ${r.amountKg})`),
        ', ',
      )}
      ON CONFLICT (outbox_id) DO NOTHING`;
