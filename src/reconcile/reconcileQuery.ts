import {
  FINDING_KIND_NAMES,
  FINDING_SEVERITIES,
  type FindingKind,
  type FindingSeverity,
} from './findingKinds.js';

/**
 * What `GET /v1/reconciliation` and `vcu-sync reconcile` accept, checked once for both (pure): the
 * filters, the page size, and where a page starts.
 */

/** Most findings (and most balance sheets) one page holds, and how many when no limit is asked. */
export const RECONCILE_LIMIT_MAX = 1000;
export const RECONCILE_LIMIT_DEFAULT = 100;

/** Longest issuance id a filter takes: the mirror's ids are far shorter; a longer one names nothing. */
export const ISSUANCE_ID_MAX = 200;

/** Which findings: those open now (the default), those resolved, or both. */
export const FINDING_STATES = ['open', 'resolved', 'all'] as const;
export type FindingState = (typeof FINDING_STATES)[number];

/** Why a value is refused: names every one allowed. */
export const UNKNOWN_KIND = `expected one of ${FINDING_KIND_NAMES.join(', ')}`;
export const UNKNOWN_SEVERITY = `expected one of ${FINDING_SEVERITIES.join(', ')}`;
export const UNKNOWN_STATE = `expected one of ${FINDING_STATES.join(', ')}`;
export const BAD_ISSUANCE = `expected an issuance id, 1-${ISSUANCE_ID_MAX} characters, not blank`;

/**
 * Where the next page starts: after finding `f` (id order), and after the balance sheet keyed
 * (`i`, `u`): its issuance and its unit ('' for the issuance's own sheet). `{f: 0, i: '', u: ''}` is
 * before everything: ids are never empty.
 */
export interface ReconcileCursor {
  f: number;
  i: string;
  u: string;
}

export const FIRST_PAGE: ReconcileCursor = { f: 0, i: '', u: '' };

/** What a reader asks. */
export interface ReconciliationQuery {
  /** One issuance's findings and balance sheets (null: every one). */
  issuance: string | null;
  kind: FindingKind | null;
  severity: FindingSeverity | null;
  state: FindingState;
  /** Where the page starts (null: the first page). */
  after: ReconcileCursor | null;
  /** Most findings, and most balance sheets, in the page. */
  limit: number;
}

/** An issuance id as a filter takes it (trimmed), or undefined when it names none. */
export function issuanceFilter(text: string): string | undefined {
  const id = text.trim();
  return id === '' || id.length > ISSUANCE_ID_MAX ? undefined : id;
}
