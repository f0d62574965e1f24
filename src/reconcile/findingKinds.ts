/**
 * The vocabulary of the reconciliation (issue 29): the kinds of finding, each with its one
 * severity, and what a finding and a balance are. Pure types and constants, imported by the rules
 * (findings.ts), the edge (pass.ts), the reads and the health rules.
 */

/** Every kind of finding, with its severity. Each is explained in docs/reconciliation.md. */
export const FINDING_KINDS = {
  /** More retired or detokenized than was tokenized (tokens outstanding below zero). */
  'outstanding-negative': 'critical',
  /** More tokenized than the issuance's amount. */
  'over-issuance': 'critical',
  /** An operation on an issuance or unit the custody data does not show in custody. */
  'not-in-custody': 'warning',
  /** An approved Retire with no matching retirement in the public units log within the window. */
  'retirement-missing': 'warning',
  /** A reported operation with no decision past `status.decision_warn_hours`. */
  'decision-overdue': 'warning',
  /** A custody deposit with no Tokenization reported within `reconcile.tokenize_within_days`. */
  'deposit-not-tokenized': 'info',
} as const;

export type FindingKind = keyof typeof FINDING_KINDS;
export const FINDING_KIND_NAMES = Object.keys(FINDING_KINDS) as FindingKind[];
export type FindingSeverity = 'critical' | 'warning' | 'info';
export const FINDING_SEVERITIES: readonly FindingSeverity[] = ['critical', 'warning', 'info'];

/** What a finding is about. */
export type FindingSubject = 'issuance' | 'unit' | 'operation';

/** A finding as the rules decide it (not yet stored). */
export interface Finding {
  kind: FindingKind;
  subject: FindingSubject;
  /** The issuance or unit id, or the operation's marketplaceTransactionRef. */
  subjectId: string;
  issuanceId: string | null;
  unitId: string | null;
  /** The operation concerned, or the latest one reported on the issuance or unit. */
  ref: string | null;
  severity: FindingSeverity;
  expectedKg: number | null;
  foundKg: number | null;
  detail: string;
}

/** The identity of a finding: one row per kind and subject. */
export const findingKey = (f: Pick<Finding, 'kind' | 'subject' | 'subjectId'>) =>
  `${f.kind}\u0000${f.subject}\u0000${f.subjectId}`;

/** What the marketplace reported on one issuance or unit, from the operations the operator approved. */
export interface Balance {
  tokenizedKg: number;
  transferredKg: number;
  retiredKg: number;
  detokenizedKg: number;
  /** Tokenized minus retired minus detokenized. */
  outstandingKg: number;
  /** The part of the outstanding amount below a whole tonne: detokenization re-tokenizes whole tonnes only. */
  fractionKg: number;
  /** Operations counted (approved). */
  approved: number;
  /** Operations reported and not decided yet (queued, sending, accepted): not counted. */
  awaiting: number;
  /** Operations whose amount or unit could not be read: not counted. */
  unreadable: number;
  /** The latest operation reported on it. */
  lastRef: string | null;
}

/** Whether the custody data shows an id in custody. */
export type CustodyState =
  | { state: 'held' }
  /** Named in custody (config, a Tokenization, a deposit) but not read from the operator yet. */
  | { state: 'awaiting' }
  | { state: 'ended'; at: string }
  | { state: 'never' };

/** A balance sheet: the marketplace's side beside what the operator shows. */
export interface BalanceSheet {
  subject: 'issuance' | 'unit';
  id: string;
  /** The unit's issuance (its operations'), or the issuance itself. */
  issuanceId: string | null;
  balance: Balance;
  /** The issuance's `issuanceAmount` in kg (issuances only; null when the mirror has no such issuance). */
  issuanceAmountKg: number | null;
  custody: CustodyState;
  /** The public units log on this issuance: its operations and the retirements among them (issuances only). */
  log: { operations: number; retiredKg: number } | null;
}
