import { inByteOrder } from '../common/textForms.js';
import { limitRows, raw, type Sql, sql } from '../store/sql.js';
import { balanceSheets, balancesOf, emptyBalance } from './balances.js';
import { type Reader, readInputs } from './facts.js';
import type { Balance, BalanceSheet, FindingKind, FindingSeverity, FindingSubject } from './findingKinds.js';
import { FIRST_PAGE, type ReconcileCursor, type ReconciliationQuery } from './reconcileQuery.js';
import type { FindingRow } from './reconcileStatements.js';

/**
 * The reconciliation as readers see it (`GET /v1/reconciliation`, `vcu-sync reconcile`), on either
 * store: the findings recorded by the passes, in id order (the order they were first found: a
 * reopened finding keeps its place, a new one comes last, so paging never skips or repeats one),
 * and the balance sheets computed now from the ledger, ordered by issuance id in byte order (each
 * issuance's sheet, then its units' sheets, by unit id). Reads only; every text clipped.
 */

/** Longest text an answer carries (ids, refs, details): a body or an operator's id cannot grow a page. */
export const TEXT_MAX = 500;

const clip = (text: string) => (text.length > TEXT_MAX ? `${text.slice(0, TEXT_MAX - 1)}…` : text);
const clipOrNull = (text: string | null) => (text === null ? null : clip(text));

/** One finding as a reader sees it. */
export interface FindingView {
  id: number;
  kind: FindingKind;
  severity: FindingSeverity;
  subject: FindingSubject;
  subjectId: string;
  issuanceId: string | null;
  unitId: string | null;
  ref: string | null;
  /** The amounts compared, in kg (null where the kind compares none). */
  expectedKg: number | null;
  foundKg: number | null;
  detail: string;
  firstSeenAt: string;
  lastSeenAt: string;
  /** When a pass found the condition gone; null while it holds. */
  resolvedAt: string | null;
}

/** One balance sheet as a reader sees it (findingKinds.ts BalanceSheet, custody flattened). */
export interface BalanceSheetView {
  subject: 'issuance' | 'unit';
  id: string;
  issuanceId: string | null;
  balance: Balance;
  issuanceAmountKg: number | null;
  custody: { state: 'held' | 'awaiting' | 'ended' | 'never'; endedAt: string | null };
  log: { operations: number; retiredKg: number } | null;
}

/** Open findings per severity. */
export type OpenCounts = Record<FindingSeverity, number>;

/** One page. */
export interface ReconciliationPage {
  findings: FindingView[];
  balances: BalanceSheetView[];
  /** Open findings by severity (of the issuance asked, else of all), whatever the other filters. */
  counts: OpenCounts;
  /** Where the next page starts; null on the last page. */
  next: ReconcileCursor | null;
}

/** What the findings are filtered by. */
export type FindingFilter = Pick<ReconciliationQuery, 'issuance' | 'kind' | 'severity' | 'state'>;

const KG = (v: unknown) => (v === null || v === undefined ? null : Number(v));

function findingView(r: FindingRow): FindingView {
  return {
    id: Number(r.id),
    kind: r.kind as FindingKind,
    severity: r.severity as FindingSeverity,
    subject: r.subject as FindingSubject,
    subjectId: clip(r.subject_id),
    issuanceId: clipOrNull(r.issuance_id),
    unitId: clipOrNull(r.unit_id),
    ref: clipOrNull(r.ref),
    expectedKg: KG(r.expected_kg),
    foundKg: KG(r.found_kg),
    detail: clip(r.detail),
    firstSeenAt: r.first_seen_at,
    lastSeenAt: r.last_seen_at,
    resolvedAt: r.resolved_at,
  };
}

function sheetView(s: BalanceSheet): BalanceSheetView {
  return {
    subject: s.subject,
    id: clip(s.id),
    issuanceId: clipOrNull(s.issuanceId),
    balance: { ...s.balance, lastRef: clipOrNull(s.balance.lastRef) },
    issuanceAmountKg: s.issuanceAmountKg,
    custody: { state: s.custody.state, endedAt: s.custody.state === 'ended' ? s.custody.at : null },
    log: s.log,
  };
}

/** The findings after id `afterId` that pass `filter`, in id order, `limit + 1` at most (the last tells there is more). */
function findingsStatement(filter: FindingFilter, afterId: number, limit: number): Sql {
  const state =
    filter.state === 'open'
      ? sql`AND resolved_at IS NULL`
      : filter.state === 'resolved'
        ? sql`AND resolved_at IS NOT NULL`
        : sql``;
  return sql`SELECT * FROM reconciliation_findings WHERE id > ${afterId} ${state}
      ${filter.kind === null ? sql`` : sql`AND kind = ${filter.kind}`}
      ${filter.severity === null ? sql`` : sql`AND severity = ${filter.severity}`}
      ${filter.issuance === null ? sql`` : sql`AND issuance_id = ${filter.issuance}`}
      ORDER BY id ${limitRows(limit + 1)}`;
}

/** A page of findings after id `afterId`; `more` when another follows. */
export async function readFindings(
  read: Reader,
  filter: FindingFilter,
  afterId: number,
  limit: number,
): Promise<{ findings: FindingView[]; more: boolean }> {
  const rows = await read<FindingRow>(findingsStatement(filter, afterId, limit));
  return { findings: rows.slice(0, limit).map(findingView), more: rows.length > limit };
}

/** Open findings per severity, of `issuance` (null: all). */
export async function readOpenCounts(read: Reader, issuance: string | null): Promise<OpenCounts> {
  const rows = await read<{ severity: string; n: number }>(
    sql`SELECT severity, count(*) AS n FROM reconciliation_findings WHERE resolved_at IS NULL
        ${issuance === null ? sql`` : sql`AND issuance_id = ${issuance}`} GROUP BY severity`,
  );
  const counts: OpenCounts = { critical: 0, warning: 0, info: 0 };
  for (const r of rows)
    if (Object.hasOwn(counts, r.severity)) counts[r.severity as FindingSeverity] = Number(r.n);
  return counts;
}

/**
 * The ledger's issuance ids from `from` (itself included when `inclusive`), in byte order (`byteOrder`:
 * '' where the store's collation already sorts so, else ` COLLATE "C"`), `limit` at most.
 */
const issuanceIds = (from: string, inclusive: boolean, limit: number, byteOrder: string) =>
  sql`SELECT issuance_id AS id FROM reconciliation_ledger
       WHERE issuance_id IS NOT NULL AND issuance_id${raw(byteOrder)} ${raw(inclusive ? '>=' : '>')} ${from}
       GROUP BY issuance_id ORDER BY issuance_id${raw(byteOrder)} ${limitRows(limit)}`;

/** A sheet's place in the order of the pages: its issuance, then '' for the issuance's own sheet or the unit id. */
const sheetKey = (s: BalanceSheet) =>
  s.subject === 'issuance' ? { i: s.id, u: '' } : { i: s.issuanceId ?? '', u: s.id };
const compareKeys = (a: { i: string; u: string }, b: { i: string; u: string }) =>
  inByteOrder(a.i, b.i) || inByteOrder(a.u, b.u);

/**
 * The sheets of `batch` (issuance ids), in page order: each issuance's, then those of the units
 * whose issuance (that of their first operation) it is. `asked` gets a sheet even with no operation
 * reported, so that asking for one issuance shows what the operator holds of it.
 */
async function sheetsOf(
  read: Reader,
  batch: readonly string[],
  statuses: readonly string[],
  asked: string | null,
): Promise<BalanceSheet[]> {
  const inputs = await readInputs(read, batch, statuses, true);
  const balances = balancesOf(inputs.facts);
  if (asked !== null && !balances.issuances.has(asked)) balances.issuances.set(asked, emptyBalance());
  const inBatch = new Set(batch);
  return balanceSheets(balances, inputs.side)
    .filter((s) => s.issuanceId !== null && inBatch.has(s.issuanceId))
    .sort((a, b) => compareKeys(sheetKey(a), sheetKey(b)));
}

/** Issuances read per statement while filling a page of sheets. */
const ISSUANCE_BATCH = 200;

/** What reads balance sheets: the retirement statuses (`reconcile.retire_match.statuses`) and the store's byte order. */
export interface SheetSettings {
  statuses: readonly string[];
  /** '' where the store sorts text in byte order, else ` COLLATE "C"` (api/mirrorQueries.ts sortsInByteOrder). */
  byteOrder: string;
}

/**
 * A page of balance sheets after `after` (its `i` and `u`), of `issuance` alone or of every issuance
 * in the ledger; `more` when another follows. An issuance with more units than a page is split
 * over pages: the next one reads it again and starts after the last unit shown.
 */
export async function readSheets(
  read: Reader,
  issuance: string | null,
  after: Pick<ReconcileCursor, 'i' | 'u'>,
  limit: number,
  settings: SheetSettings,
): Promise<{ sheets: BalanceSheetView[]; more: boolean; last: { i: string; u: string } | null }> {
  const out: BalanceSheet[] = [];
  let from = after.i;
  let inclusive = true;
  for (;;) {
    const size = Math.min(limit + 1, ISSUANCE_BATCH);
    const batch =
      issuance !== null
        ? inclusive && inByteOrder(issuance, after.i) >= 0
          ? [issuance]
          : []
        : (await read<{ id: string }>(issuanceIds(from, inclusive, size, settings.byteOrder))).map(
            (r) => r.id,
          );
    if (batch.length === 0) break;
    for (const s of await sheetsOf(read, batch, settings.statuses, issuance)) {
      if (compareKeys(sheetKey(s), after) > 0) out.push(s);
    }
    if (out.length > limit || issuance !== null || batch.length < size) break;
    from = batch[batch.length - 1] as string;
    inclusive = false;
  }
  const page = out.slice(0, limit);
  const last = page.at(-1);
  // The key of the unclipped ids: a clipped one would start the next page at the wrong place.
  return { sheets: page.map(sheetView), more: out.length > limit, last: last ? sheetKey(last) : null };
}

/**
 * One page of findings and balance sheets: up to `limit` of each. The cursor moves both lists on;
 * the answer is the last page when neither has more.
 */
export async function readReconciliation(
  read: Reader,
  query: ReconciliationQuery,
  settings: SheetSettings,
): Promise<ReconciliationPage> {
  const after = query.after ?? FIRST_PAGE;
  const [found, sheets, counts] = await Promise.all([
    readFindings(read, query, after.f, query.limit),
    readSheets(read, query.issuance, after, query.limit, settings),
    readOpenCounts(read, query.issuance),
  ]);
  const next =
    found.more || sheets.more
      ? { f: found.findings.at(-1)?.id ?? after.f, ...(sheets.last ?? { i: after.i, u: after.u }) }
      : null;
  return { findings: found.findings, balances: sheets.sheets, counts, next };
}
