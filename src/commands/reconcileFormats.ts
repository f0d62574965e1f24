import { grams } from '../outbox/ledgerEntry.js';
import type { PassOutcome } from '../reconcile/pass.js';
import type { BalanceSheetView, FindingView, OpenCounts } from '../reconcile/reconciliationReads.js';
import { type Column, textTable } from './textTable.js';

/**
 * How `vcu-sync reconcile` prints (pure): a table for people, the API's JSON, or CSV for auditors.
 * Each is written a page at a time: findings first, then balance sheets, so a large book streams.
 */

/** What the command prints in. */
export const RECONCILE_FORMATS = ['table', 'json', 'csv'] as const;
export type ReconcileFormat = (typeof RECONCILE_FORMATS)[number];

/** C0 and C1 control characters (ESC among them), as they would reach a terminal. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/**
 * Text from a body or the operator (ids, refs) as a terminal may show it: a control character is
 * printed as U+FFFD, so a value cannot move the cursor, recolour or retitle the reader's terminal.
 */
const shown = (text: string | null) => (text === null ? '' : text.replace(CONTROL, '\ufffd'));

/** kg as tonnes for a table cell, to the gram ('' when there is no amount). */
const t = (kg: number | null) => (kg === null ? '' : String(grams(kg / 1000)));
const day = (iso: string | null) => (iso === null ? '' : iso.slice(0, 19).replace('T', ' '));

/** The one line saying what the pass did. */
export function passLine(outcome: PassOutcome, issuance: string | null): string {
  const scope = issuance === null ? 'every issuance' : `issuance ${shown(issuance)}`;
  return `Reconciled ${scope}: ${outcome.operations} operation(s), ${outcome.sheets} balance sheet(s); ${outcome.opened.length} finding(s) opened, ${outcome.resolved.length} resolved`;
}

/** The closing line of the table: the open findings by severity. */
export const countsLine = (c: OpenCounts) =>
  `Open findings: ${c.critical} critical, ${c.warning} warning, ${c.info} info`;

type FindingCells = Record<
  'severity' | 'kind' | 'subject' | 'issuance' | 'unit' | 'expected' | 'found' | 'firstSeen' | 'detail',
  string
>;
const FINDING_COLUMNS: ReadonlyArray<Column<keyof FindingCells>> = [
  ['SEVERITY', 'severity'],
  ['KIND', 'kind'],
  ['SUBJECT', 'subject'],
  ['ISSUANCE', 'issuance'],
  ['UNIT', 'unit'],
  ['EXPECTED_T', 'expected'],
  ['FOUND_T', 'found'],
  ['FIRST_SEEN', 'firstSeen'],
  ['DETAIL', 'detail'],
];

const findingCells = (f: FindingView): FindingCells => ({
  severity: f.severity,
  kind: f.kind,
  subject: `${f.subject} ${shown(f.subjectId)}`,
  issuance: shown(f.issuanceId),
  unit: shown(f.unitId),
  expected: t(f.expectedKg),
  found: t(f.foundKg),
  firstSeen: day(f.firstSeenAt),
  detail: shown(f.detail),
});

type SheetCells = Record<
  | 'subject'
  | 'id'
  | 'issuance'
  | 'tokenized'
  | 'transferred'
  | 'retired'
  | 'detokenized'
  | 'outstanding'
  | 'amount'
  | 'custody'
  | 'log'
  | 'awaiting',
  string
>;
const SHEET_COLUMNS: ReadonlyArray<Column<keyof SheetCells>> = [
  ['SUBJECT', 'subject'],
  ['ID', 'id'],
  ['ISSUANCE', 'issuance'],
  ['TOKENIZED_T', 'tokenized'],
  ['TRANSFERRED_T', 'transferred'],
  ['RETIRED_T', 'retired'],
  ['DETOKENIZED_T', 'detokenized'],
  ['OUTSTANDING_T', 'outstanding'],
  ['ISSUANCE_AMOUNT_T', 'amount'],
  ['CUSTODY', 'custody'],
  ['LOG_OPS/RETIRED_T', 'log'],
  ['AWAITING', 'awaiting'],
];

const custodyText = (s: BalanceSheetView) =>
  s.custody.state === 'ended' ? `ended ${day(s.custody.endedAt)}` : s.custody.state;

const sheetCells = (s: BalanceSheetView): SheetCells => ({
  subject: s.subject,
  id: shown(s.id),
  issuance: s.subject === 'unit' ? shown(s.issuanceId) : '',
  tokenized: t(s.balance.tokenizedKg),
  transferred: t(s.balance.transferredKg),
  retired: t(s.balance.retiredKg),
  detokenized: t(s.balance.detokenizedKg),
  outstanding: t(s.balance.outstandingKg),
  amount: t(s.issuanceAmountKg),
  custody: custodyText(s),
  log: s.log === null ? '' : `${s.log.operations}/${t(s.log.retiredKg)}`,
  awaiting: String(s.balance.awaiting),
});

/** A page of findings as a table (the heading on the first page only). */
export function findingsTable(findings: readonly FindingView[], first: boolean): string {
  if (findings.length === 0) return first ? 'Open findings: none\n' : '';
  const heading = first ? 'Open findings (amounts in tonnes, times UTC)\n' : '';
  return `${heading}${textTable(FINDING_COLUMNS, findings.map(findingCells))}\n`;
}

/** A page of balance sheets as a table (the heading on the first page only). */
export function sheetsTable(sheets: readonly BalanceSheetView[], first: boolean): string {
  if (sheets.length === 0) return first ? 'Balance sheets: none (no operation reported)\n' : '';
  const heading = first
    ? "Balance sheets (tonnes, approved operations; AWAITING: reported, not decided; LOG: the public log's operations/retired)\n"
    : '';
  return `${heading}${textTable(SHEET_COLUMNS, sheets.map(sheetCells))}\n`;
}

/** The CSV's one header: a finding's columns, then a balance sheet's; `record` says which a row is. */
export const CSV_COLUMNS = [
  'record',
  'severity',
  'kind',
  'subject',
  'id',
  'issuance_id',
  'unit_id',
  'ref',
  'expected_kg',
  'found_kg',
  'first_seen_at',
  'last_seen_at',
  'detail',
  'tokenized_kg',
  'transferred_kg',
  'retired_kg',
  'detokenized_kg',
  'outstanding_kg',
  'fraction_kg',
  'approved',
  'awaiting',
  'unreadable',
  'issuance_amount_kg',
  'custody',
  'custody_ended_at',
  'log_operations',
  'log_retired_kg',
] as const;
type CsvRow = Partial<Record<(typeof CSV_COLUMNS)[number], string | number | null>>;

/** Text a spreadsheet would read as a formula (or a cell break) when it starts a cell. */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * One CSV cell (RFC 4180): quoted when it holds a comma, a quote or a line break, quotes doubled;
 * text starting with = + - @ (or a tab or CR) gets a leading ' so a spreadsheet shows it rather
 * than running it as a formula. Numbers are written as they are: a number is never a formula.
 */
export function csvCell(value: string | number | null | undefined): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number') return String(value);
  const text = FORMULA_START.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

const csvLine = (row: CsvRow) => `${CSV_COLUMNS.map((c) => csvCell(row[c])).join(',')}\r\n`;

export const csvHeader = () => `${CSV_COLUMNS.join(',')}\r\n`;

export const csvFindings = (findings: readonly FindingView[]) =>
  findings
    .map((f) =>
      csvLine({
        record: 'finding',
        severity: f.severity,
        kind: f.kind,
        subject: f.subject,
        id: f.subjectId,
        issuance_id: f.issuanceId,
        unit_id: f.unitId,
        ref: f.ref,
        expected_kg: f.expectedKg,
        found_kg: f.foundKg,
        first_seen_at: f.firstSeenAt,
        last_seen_at: f.lastSeenAt,
        detail: f.detail,
      }),
    )
    .join('');

export const csvSheets = (sheets: readonly BalanceSheetView[]) =>
  sheets
    .map((s) =>
      csvLine({
        record: 'balance',
        subject: s.subject,
        id: s.id,
        issuance_id: s.issuanceId,
        unit_id: s.subject === 'unit' ? s.id : null,
        ref: s.balance.lastRef,
        tokenized_kg: s.balance.tokenizedKg,
        transferred_kg: s.balance.transferredKg,
        retired_kg: s.balance.retiredKg,
        detokenized_kg: s.balance.detokenizedKg,
        outstanding_kg: s.balance.outstandingKg,
        fraction_kg: s.balance.fractionKg,
        approved: s.balance.approved,
        awaiting: s.balance.awaiting,
        unreadable: s.balance.unreadable,
        issuance_amount_kg: s.issuanceAmountKg,
        custody: s.custody.state,
        custody_ended_at: s.custody.endedAt,
        log_operations: s.log?.operations ?? null,
        log_retired_kg: s.log?.retiredKg ?? null,
      }),
    )
    .join('');
