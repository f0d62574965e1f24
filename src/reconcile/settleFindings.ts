import { type Finding, findingKey } from './findingKinds.js';
import type { FindingRow } from './reconcileStatements.js';

/**
 * What a pass changes in `reconciliation_findings`, decided from the rows it may change and the
 * findings that hold now (pure): new or resolved-and-back findings are (re)opened, open ones whose
 * figures moved are refreshed, unchanged ones only seen again, and open ones no longer found in the
 * pass's scope resolved.
 */
export interface Settlement {
  /** New, reopened, or with other figures: upserted. */
  upsert: Finding[];
  /** Which of `upsert` open a finding (new or reopened): raise `reconciliation.finding`. */
  opening: Set<string>;
  /** Open and unchanged: their `last_seen_at` moves. */
  touch: number[];
  /** Open, in scope, and no longer found: resolved. */
  resolve: FindingRow[];
}

const same = (row: FindingRow, f: Finding) =>
  row.ref === f.ref &&
  row.severity === f.severity &&
  row.detail === f.detail &&
  row.issuance_id === f.issuanceId &&
  row.unit_id === f.unitId &&
  nullableEqual(row.expected_kg, f.expectedKg) &&
  nullableEqual(row.found_kg, f.foundKg);

const nullableEqual = (a: number | null, b: number | null) =>
  a === null || b === null ? a === b : Math.abs(Number(a) - b) < 0.0005;

/**
 * `inScope` says which open rows this pass may resolve (a pass over some issuances leaves the
 * others' findings alone).
 */
export function settleFindings(
  existing: readonly FindingRow[],
  current: readonly Finding[],
  inScope: (row: FindingRow) => boolean,
): Settlement {
  const rows = new Map(
    existing.map((r) => [
      findingKey({
        kind: r.kind as Finding['kind'],
        subject: r.subject as Finding['subject'],
        subjectId: r.subject_id,
      }),
      r,
    ]),
  );
  const found = new Set<string>();
  const out: Settlement = { upsert: [], opening: new Set(), touch: [], resolve: [] };
  for (const f of current) {
    const key = findingKey(f);
    if (found.has(key)) continue;
    found.add(key);
    const row = rows.get(key);
    if (!row || row.resolved_at !== null) {
      out.upsert.push(f);
      out.opening.add(key);
    } else if (!same(row, f)) out.upsert.push(f);
    else out.touch.push(row.id);
  }
  for (const [key, row] of rows) {
    if (row.resolved_at === null && !found.has(key) && inScope(row)) out.resolve.push(row);
  }
  return out;
}
