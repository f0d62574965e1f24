import { type ColumnKinds, type ColumnTypes, index, table, uniqueIndex } from './kinds.js';

/**
 * What the reconciliation (issue 29, src/reconcile/) keeps: the amounts of each reported operation,
 * read once from its body, and the findings.
 */

/**
 * One row per outbox row, read from its body once (bodies never change after the enqueue): what
 * the balances add up, indexed by issuance and unit so that a pass over a few issuances reads only
 * their operations. The operation's state stays in `outbox`, joined at each pass.
 */
export const reconciliationLedgerTable = <C extends ColumnTypes>(
  k: ColumnKinds<C>,
  outboxId: () => C['column'],
) =>
  table(
    'reconciliation_ledger',
    {
      outbox_id: k.reference(outboxId, 'cascade').notNull(),
      /** `tokenization`, `transfer`, `retire`, `detokenization`, or `unknown` (a spelling no rule reads). */
      kind: k.text().notNull(),
      /** The body's `issuanceId` and `unitId`, as text (the mirror's keys are text). */
      issuance_id: k.text(),
      unit_id: k.text(),
      /** `transactionAmount` in kg (tCO2e x 1000); null when the amount or its unit could not be read. */
      amount_kg: k.real(),
    },
    {
      primaryKey: ['outbox_id'],
      indexes: [
        index('reconciliation_ledger_issuance_idx', 'issuance_id'),
        index('reconciliation_ledger_unit_idx', 'unit_id'),
      ],
    },
  );

/** One row per finding, reopened (not duplicated) when a resolved condition holds again. */
export const reconciliationFindingsTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  table(
    'reconciliation_findings',
    {
      id: k.rowId(),
      /** A FINDING_KINDS entry (src/reconcile/findingKinds.ts), e.g. `outstanding-negative`. */
      kind: k.text().notNull(),
      /** What it is about: `issuance`, `unit` or `operation`. */
      subject: k.text().notNull(),
      /** The issuance or unit id, or the operation's marketplaceTransactionRef. */
      subject_id: k.text().notNull(),
      issuance_id: k.text(),
      unit_id: k.text(),
      /** The operation concerned (or the latest one, for an issuance or unit). */
      ref: k.text(),
      /** `critical`, `warning` or `info`. */
      severity: k.text().notNull(),
      /** The amounts compared, in kg (null where the finding compares no amount). */
      expected_kg: k.real(),
      found_kg: k.real(),
      /** What was found, as a sentence with the figures. */
      detail: k.text().notNull(),
      first_seen_at: k.at().notNull(),
      last_seen_at: k.at().notNull(),
      /** Set when a pass found the condition no longer holds; cleared when it holds again. */
      resolved_at: k.at(),
    },
    {
      indexes: [
        uniqueIndex('reconciliation_findings_what_idx', 'kind', 'subject', 'subject_id'),
        index('reconciliation_findings_issuance_idx', 'issuance_id'),
        index('reconciliation_findings_open_idx', 'resolved_at', 'severity'),
      ],
    },
  );
