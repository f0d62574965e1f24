import { z } from 'zod';
import { FINDING_KIND_NAMES, FINDING_SEVERITIES } from '../../reconcile/findingKinds.js';
import { instant } from './common.js';

/**
 * `GET /v1/reconciliation` (reconcile/reconciliationReads.ts FindingView, BalanceSheetView, ReconciliationPage):
 * the findings the passes recorded and the balance sheets of the issuances in the page. Amounts in
 * kg (tCO2e x 1000), to the gram.
 */

const kg = (what: string) => z.number().describe(`${what}, kg`);
const id = z.string().describe('clipped at 500 characters');

/** One finding (table reconciliation_findings). */
export const reconciliationFinding = z
  .object({
    id: z.number().int().describe('the change feed names it by this (resource reconciliation_findings)'),
    kind: z.enum(FINDING_KIND_NAMES as [string, ...string[]]).describe('explained in docs/reconciliation.md'),
    severity: z.enum(FINDING_SEVERITIES as [string, ...string[]]).describe("the kind's severity"),
    subject: z.enum(['issuance', 'unit', 'operation']).describe('what it is about'),
    subjectId: id.describe("the issuance or unit id, or the operation's marketplaceTransactionRef"),
    issuanceId: id.nullable(),
    unitId: id.nullable(),
    ref: id
      .nullable()
      .describe('the operation concerned, or the latest one reported on the issuance or unit'),
    expectedKg: kg('what the books should show')
      .nullable()
      .describe('null where the kind compares no amount'),
    foundKg: kg('what they show').nullable().describe('null where the kind compares no amount'),
    detail: z.string().describe('what was found, as a sentence with the figures (clipped at 500 characters)'),
    firstSeenAt: instant,
    lastSeenAt: instant.describe('the last pass that found it'),
    resolvedAt: instant.nullable().describe('when a pass found the condition gone; null while it holds'),
  })
  .meta({ id: 'ReconciliationFinding' });

/** What the marketplace reported on an issuance or unit, from the operations the operator approved. */
export const reconciliationBalance = z
  .object({
    tokenizedKg: kg('approved Tokenizations'),
    transferredKg: kg('approved Transfers'),
    retiredKg: kg('approved Retires'),
    detokenizedKg: kg('approved Detokenizations'),
    outstandingKg: kg('tokenized minus retired minus detokenized'),
    fractionKg: kg(
      'the part of the outstanding amount below a whole tonne (detokenization takes whole tonnes)',
    ),
    approved: z.number().int().describe('operations counted'),
    awaiting: z.number().int().describe('operations reported and not decided yet (not counted)'),
    unreadable: z
      .number()
      .int()
      .describe('approved operations whose amount or unit could not be read (not counted)'),
    lastRef: id.nullable().describe('the latest operation reported on it'),
  })
  .meta({ id: 'ReconciliationBalance' });

/** A balance sheet: the marketplace's side beside what the operator shows. */
export const reconciliationSheet = z
  .object({
    subject: z.enum(['issuance', 'unit']),
    id,
    issuanceId: id.nullable().describe("the issuance itself, or the unit's (that of its first operation)"),
    balance: reconciliationBalance,
    issuanceAmountKg: kg("the issuance's issuanceAmount")
      .nullable()
      .describe('issuances only; null when the mirror has no such issuance'),
    custody: z.object({
      state: z
        .enum(['held', 'awaiting', 'ended', 'never'])
        .describe('held: in the custody data; awaiting: named in custody, not read yet; ended; never'),
      endedAt: instant.nullable().describe('when its custody ended (state ended); else null'),
    }),
    log: z
      .object({
        operations: z.number().int().describe("the public units log's operations on the issuance"),
        retiredKg: kg('of those, the retirements (reconcile.retire_match.statuses)'),
      })
      .nullable()
      .describe('issuances only'),
  })
  .meta({ id: 'ReconciliationSheet' });

/** One page of the reconciliation. */
export const reconciliationPage = z
  .object({
    findings: z.array(reconciliationFinding).describe('in id order (the order first found), at most `limit`'),
    balances: z
      .array(reconciliationSheet)
      .describe("by issuance id (byte order): each issuance's sheet, then its units', at most `limit`"),
    counts: z
      .object({ critical: z.number().int(), warning: z.number().int(), info: z.number().int() })
      .describe('open findings by severity, of the issuance asked (else of all), whatever the other filters'),
    next: z.string().nullable().describe('pass as `cursor` for the next page; null on the last page'),
  })
  .meta({ id: 'ReconciliationPage' });
