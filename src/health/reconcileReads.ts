import { inByteOrder } from '../common/textForms.js';
import { FINDING_SEVERITIES, type FindingSeverity } from '../reconcile/findingKinds.js';
import { all, first, type Script } from '../store/script.js';
import { limitRows, sql } from '../store/sql.js';
import type { ReconciliationFacts, ReconciliationFindingFacts } from './snapshot.js';

/**
 * The snapshot's reconciliation facts (issue 29: `ledger-mismatch`, the
 * `vcu_sync_reconciliation_findings` gauges, the status page's "Reconciliation"), read in the
 * snapshot's transaction from `reconciliation_findings`, written once for both stores. Bounded:
 * the open findings tallied by kind and severity (a handful of rows), {@link RECENT_FINDINGS} of
 * them listed, each text clipped.
 */

/** Open findings the snapshot lists, the worst first; the tallies count the rest. */
export const RECENT_FINDINGS = 20;

/** Longest text of a finding the snapshot carries (ids and details come from the operator's data). */
const TEXT_MAX = 200;

const clip = (text: string) => (text.length > TEXT_MAX ? `${text.slice(0, TEXT_MAX - 1)}…` : text);
const clipOrNull = (text: string | null) => (text === null ? null : clip(text));
const numberOrNull = (n: number | string | null) => (n === null ? null : Number(n));

/** A severity as stored; one this version does not know counts as a warning (never silenced, never paging). */
export function severityOf(stored: string): FindingSeverity {
  return (FINDING_SEVERITIES as readonly string[]).includes(stored) ? (stored as FindingSeverity) : 'warning';
}

const RANK: Record<FindingSeverity, number> = { critical: 0, warning: 1, info: 2 };

/** Critical first, then warning, then info: the order the tallies and the list are shown in. */
export const bySeverity = (a: FindingSeverity, b: FindingSeverity) => RANK[a] - RANK[b];

/** An open `reconciliation_findings` row, as the snapshot reads it. */
interface OpenFindingRow {
  id: number;
  kind: string;
  severity: string;
  subject: string;
  subject_id: string;
  issuance_id: string | null;
  ref: string | null;
  expected_kg: number | string | null;
  found_kg: number | string | null;
  detail: string;
  first_seen_at: string;
  last_seen_at: string;
}

/** An open finding as the snapshot shows it. */
export function findingFacts(row: OpenFindingRow): ReconciliationFindingFacts {
  return {
    id: Number(row.id),
    kind: clip(row.kind),
    severity: severityOf(row.severity),
    subject: clip(row.subject),
    subjectId: clip(row.subject_id),
    issuanceId: clipOrNull(row.issuance_id),
    ref: clipOrNull(row.ref),
    expectedKg: numberOrNull(row.expected_kg),
    foundKg: numberOrNull(row.found_kg),
    detail: clip(row.detail),
    firstSeenAt: new Date(row.first_seen_at).toISOString(),
    lastSeenAt: new Date(row.last_seen_at).toISOString(),
  };
}

const iso = (at: string | null) => (at === null ? null : new Date(at).toISOString());

/** The later of two instants (ISO), null when neither is known. */
function later(a: string | null, b: string | null): string | null {
  if (a === null || b === null) return a ?? b;
  return Date.parse(a) >= Date.parse(b) ? a : b;
}

/** The open findings by kind and severity, a severity this version does not know read as {@link severityOf}. */
function tallied(rows: ReadonlyArray<{ kind: string; severity: string; findings: number }>) {
  const out = new Map<string, ReconciliationFacts['open'][number]>();
  for (const r of rows) {
    const severity = severityOf(r.severity);
    const key = `${r.kind}\u0000${severity}`;
    const seen = out.get(key);
    if (seen) seen.findings += Number(r.findings);
    else out.set(key, { kind: clip(r.kind), severity, findings: Number(r.findings) });
  }
  return [...out.values()];
}

/** The reconciliation facts as of now. */
export function* reconciliationFacts(): Script<ReconciliationFacts> {
  // Open rows only (the index on resolved_at finds them): resolved ones are kept for ever.
  const open = yield* all<{ kind: string; severity: string; findings: number; seen: string | null }>(
    sql`SELECT kind, severity, count(*) AS findings, max(last_seen_at) AS seen FROM reconciliation_findings
         WHERE resolved_at IS NULL GROUP BY kind, severity`,
  );
  // The worst first, then the newest: the example the problem names is the one that matters most.
  const recent = yield* all<OpenFindingRow>(
    sql`SELECT id, kind, severity, subject, subject_id, issuance_id, ref, expected_kg, found_kg, detail,
               first_seen_at, last_seen_at
          FROM reconciliation_findings WHERE resolved_at IS NULL
         ORDER BY CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 ELSE 2 END,
                  first_seen_at DESC, id DESC
         ${limitRows(RECENT_FINDINGS)}`,
  );
  // A pass touches the open findings and resolves the others: the later of the two is its last
  // record (a resolved row was last seen before it was resolved). max(resolved_at) reads the index.
  const resolved = yield* first<{ at: string | null }>(
    sql`SELECT max(resolved_at) AS at FROM reconciliation_findings`,
  );
  const seen = open.reduce<string | null>((at, r) => later(at, iso(r.seen)), null);
  return {
    // Sorted here: SQLite has no "C" collation, and PostgreSQL's default may not be byte order.
    open: tallied(open).sort((a, b) => bySeverity(a.severity, b.severity) || inByteOrder(a.kind, b.kind)),
    recent: recent.map(findingFacts),
    lastRecordedAt: later(seen, iso(resolved?.at ?? null)),
  };
}
