import { z } from 'zod';

/**
 * `[reconcile]`: the marketplace's reported operations against the registry's data (issue 29,
 * src/reconcile/). Findings are recorded in `reconciliation_findings` and reported; nothing the
 * marketplace or the operator sent is changed by them.
 */

/** How an approved Retire finds its retirement in the operator's public units log. */
const retireMatchSchema = z
  .strictObject({
    /** The log entry's `unitsIssuanceID` equals the operation's `issuanceId` (default: true). */
    issuance: z.boolean().default(true),
    /** The log entry's `unitsOperationID` equals the operation's `unitId` (default: false). */
    unit: z.boolean().default(false),
    /** The log entry's `unitsQuantity` (tCO2e) equals the operation's amount, compared in kg (default: true). */
    quantity: z.boolean().default(true),
    /** `unitsStatus` values that mean a retirement, compared case-insensitively (default: ["Retired"]). */
    statuses: z.array(z.string().trim().min(1)).min(1).default(['Retired']),
  })
  .refine((m) => m.issuance || m.unit, {
    message: 'set issuance or unit (or both): without either every retirement in the log would match',
  });

export const reconcileSchema = z.strictObject({
  /** Compare the reported operations with the registry's data and record findings; false turns it off (default: true). */
  enabled: z.boolean().default(true),
  /** An approved Retire with no matching retirement in the public units log this long after its approval is a finding, in hours (default: 72). */
  retire_window_hours: z.number().positive().default(72),
  /** A custody deposit with no Tokenization reported for its ids this long after it is a finding (info), in days (default: 7). */
  tokenize_within_days: z.number().positive().default(7),
  /** Hours between full passes over every issuance and unit; touched ones are re-evaluated after each sync page, decision and custody read (default: 24). */
  full_every_hours: z.number().positive().default(24),
  /** How an approved Retire is matched with the public log's retirements (default: same issuance, same quantity, status "Retired"). */
  retire_match: retireMatchSchema.default(retireMatchSchema.parse({})),
});

export type ReconcileSettings = z.output<typeof reconcileSchema>;
