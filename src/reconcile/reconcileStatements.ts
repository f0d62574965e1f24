import { putDaemonState } from '../store/daemonState.js';
import { join, limitRows, raw, type Sql, sql, typed, valueList } from '../store/sql.js';
import type { Finding } from './findingKinds.js';

/**
 * The reconciliation's statements, written once for both stores (src/store/sql.ts renders them).
 * A scope is every issuance (null) or a list of issuance ids; a unit is in scope with the issuances
 * of its operations.
 */

/** Most values one IN list or VALUES group carries (far below both stores' limits). */
export const GROUP = 500;

/**
 * Outbox rows the ledger has not read yet (bodies never change: each is read once). The ledger's
 * side is bounded too (`l.outbox_id > afterId`, implied by the join): PostgreSQL's merge anti-join
 * otherwise walks the ledger's key from its start for every page, a catch-up quadratic in its size.
 */
export const unledgered = (afterId: number, limit: number) =>
  sql`SELECT o.id, o.body FROM outbox o
       WHERE o.id > ${afterId}
         AND NOT EXISTS (SELECT 1 FROM reconciliation_ledger l
                          WHERE l.outbox_id = o.id AND l.outbox_id > ${afterId})
       ORDER BY o.id ${limitRows(limit)}`;

/**
 * The `daemon_state` key of the catch-up's mark: every outbox id up to its value has its ledger entry
 * (where processes share the store, but for ids committed late: pass.ts, LATE_COMMIT_SPAN). Not the
 * newest entry's id: entries are also written with their rows (operations/ledger.ts), above rows of
 * an older version still without one.
 */
export const LEDGER_MARK_KEY = 'reconcile.ledger_through';

export const ledgerMark = () => sql`SELECT value FROM daemon_state WHERE key = ${LEDGER_MARK_KEY}`;

export const setLedgerMark = (outboxId: number, at: string) =>
  putDaemonState(LEDGER_MARK_KEY, String(outboxId), at);

export const outboxHead = () => sql`SELECT coalesce(max(id), 0) AS id FROM outbox`;

/**
 * Reported operations with their outbox state: every one (null), or those on these issuances or
 * units, each read through its own index (one statement for both, joined by `OR`, scanned).
 */
export function ledgerFacts(by: { column: 'issuance_id' | 'unit_id'; ids: readonly string[] } | null): Sql {
  const select = sql`SELECT l.outbox_id, l.kind, l.issuance_id, l.unit_id, l.amount_kg, o.state,
        o."marketplaceTransactionRef" AS ref, o.created_at, o.accepted_at, o.decided_at
      FROM reconciliation_ledger l JOIN outbox o ON o.id = l.outbox_id`;
  if (by === null) return select;
  return sql`${select} WHERE ${raw(`l.${by.column}`)} IN (${valueList(by.ids)})`;
}

/** Issuance ids in the ledger after `after` (text order), for paged balance sheets. */
export const ledgerIssuances = (after: string | null, limit: number) =>
  sql`SELECT DISTINCT issuance_id AS id FROM reconciliation_ledger
       WHERE issuance_id IS NOT NULL ${after === null ? sql`` : sql`AND issuance_id > ${after}`}
       ORDER BY issuance_id ${limitRows(limit)}`;

const inScope = (column: string, ids: readonly string[] | null) =>
  ids === null ? sql`` : sql`AND ${raw(column)} IN (${valueList(ids)})`;

/** `issuanceAmount` of live issuances, public first, then the custody read's. */
export const issuanceAmounts = (ids: readonly string[] | null) =>
  sql`SELECT "issuanceId" AS id, "issuanceAmount" AS amount, 0 AS custody FROM issuances
       WHERE _removed_at IS NULL ${inScope('"issuanceId"', ids)}
      UNION ALL
      SELECT "issuanceId" AS id, "issuanceAmount" AS amount, 1 AS custody FROM custody_issuances
       WHERE _removed_at IS NULL ${inScope('"issuanceId"', ids)}`;

/** The custody reads of issuances or units, and the ids named in custody (config, Tokenizations, deposits). */
export const custodyRows = (table: 'custody_issuances' | 'custody_units', ids: readonly string[] | null) => {
  const key = table === 'custody_issuances' ? '"issuanceId"' : '"unitsOperationID"';
  return sql`SELECT ${raw(key)} AS id, _custody_ended_at AS ended_at, _removed_at AS removed_at
      FROM ${raw(table)} WHERE 1 = 1 ${inScope(key, ids)}`;
};
export const custodyIdRows = (kind: 'issuances' | 'units', ids: readonly string[] | null) =>
  sql`SELECT id, source, added_at, ended_at FROM custody_ids WHERE kind = ${kind} ${inScope('id', ids)}`;

/**
 * The log's distinct statuses, each found with one seek of the status index (a loose index scan:
 * as many steps as there are statuses, not rows).
 */
const LOG_STATUSES = sql`WITH RECURSIVE log_statuses(status) AS (
        SELECT min("unitsStatus") FROM unit_operations
        UNION ALL
        SELECT (SELECT min("unitsStatus") FROM unit_operations WHERE "unitsStatus" > log_statuses.status)
          FROM log_statuses WHERE log_statuses.status IS NOT NULL)`;

/**
 * Retirement-like entries of the public units log (`statuses` lowercased, compared with the log's
 * case-insensitively). Over the whole log, `lower("unitsStatus")` on each row cannot use the
 * status index and reads every row of it (1M rows: about a second on SQLite); instead the few
 * distinct statuses that match are found first and their rows read by equality, through the status
 * index where the planner finds it cheaper (docs/benchmarks.md, "Reconciliation"). A scope reads
 * its issuances' rows by the issuance index and tests each.
 */
export const logRetirements = (statuses: readonly string[], issuances: readonly string[] | null) =>
  issuances === null
    ? sql`${LOG_STATUSES}
      SELECT "unitsOperationID" AS id, "unitsIssuanceID" AS issuance_id, "unitsQuantity" AS quantity
      FROM unit_operations
      WHERE _removed_at IS NULL
        AND "unitsStatus" IN (SELECT status FROM log_statuses WHERE lower(status) IN (${valueList(statuses)}))`
    : sql`SELECT "unitsOperationID" AS id, "unitsIssuanceID" AS issuance_id, "unitsQuantity" AS quantity
      FROM unit_operations
      WHERE _removed_at IS NULL AND lower("unitsStatus") IN (${valueList(statuses)})
      ${inScope('"unitsIssuanceID"', issuances)}`;

/** The public log's operations per issuance (for balance sheets). */
export const logCounts = (issuances: readonly string[]) =>
  sql`SELECT "unitsIssuanceID" AS id, count(*) AS operations FROM unit_operations
      WHERE _removed_at IS NULL AND "unitsIssuanceID" IN (${valueList(issuances)})
      GROUP BY "unitsIssuanceID"`;

/** A `reconciliation_findings` row as read. */
export interface FindingRow {
  id: number;
  kind: string;
  subject: string;
  subject_id: string;
  issuance_id: string | null;
  unit_id: string | null;
  ref: string | null;
  severity: string;
  expected_kg: number | null;
  found_kg: number | null;
  detail: string;
  first_seen_at: string;
  last_seen_at: string;
  resolved_at: string | null;
}

/** The findings a pass over `scope` may resolve: those of its issuances (every one when null). */
export function scopeFindings(scope: readonly string[] | null): Sql {
  if (scope === null) return sql`SELECT * FROM reconciliation_findings`;
  return sql`SELECT * FROM reconciliation_findings WHERE issuance_id IN (${valueList(scope)})`;
}

/** The findings of one kind about these subjects, open or not (through the unique index). */
export const findingsAbout = (kind: string, subject: string, subjectIds: readonly string[]) =>
  sql`SELECT * FROM reconciliation_findings
       WHERE kind = ${kind} AND subject = ${subject} AND subject_id IN (${valueList(subjectIds)})`;

/** Inserts findings, or reopens and refreshes those already recorded; the ids. */
export const upsertFindings = (findings: readonly Finding[], at: string) =>
  sql`INSERT INTO reconciliation_findings (kind, subject, subject_id, issuance_id, unit_id, ref, severity,
        expected_kg, found_kg, detail, first_seen_at, last_seen_at, resolved_at)
      VALUES ${join(
        findings.map(
          (f) =>
            sql`(${f.kind}, ${f.subject}, ${f.subjectId}, ${f.issuanceId}, ${f.unitId}, ${f.ref}, ${f.severity},
              ${f.expectedKg}, ${f.foundKg}, ${f.detail}, ${typed(at, 'timestamptz')}, ${typed(at, 'timestamptz')}, NULL)`,
        ),
        ', ',
      )}
      ON CONFLICT (kind, subject, subject_id) DO UPDATE SET
        issuance_id = excluded.issuance_id, unit_id = excluded.unit_id, ref = excluded.ref,
        severity = excluded.severity, expected_kg = excluded.expected_kg, found_kg = excluded.found_kg,
        detail = excluded.detail, last_seen_at = excluded.last_seen_at, resolved_at = NULL
      RETURNING id, kind, subject, subject_id`;

export const touchFindings = (ids: readonly number[], at: string) =>
  sql`UPDATE reconciliation_findings SET last_seen_at = ${typed(at, 'timestamptz')}
      WHERE id IN (${valueList(ids)})`;

export const resolveFindings = (ids: readonly number[], at: string) =>
  sql`UPDATE reconciliation_findings SET resolved_at = ${typed(at, 'timestamptz')}
      WHERE resolved_at IS NULL AND id IN (${valueList(ids)})
      RETURNING id`;
