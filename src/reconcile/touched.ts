import { limitRows, type Sql, sql, valueList } from '../store/sql.js';
import type { Reader } from './facts.js';
import { GROUP } from './reconcileStatements.js';

/**
 * Which issuances a run of change-feed rows touched, so the daemon re-evaluates only those (issue
 * 29: "after each sync page, decision and custody read, not a full pass each time"). Each resource
 * names its records its own way: an issuance id, a log entry's unitsOperationID, a unit in custody,
 * an operation's marketplaceTransactionRef; the statements below turn them into issuance ids.
 */

/** A change-feed row as the reconciler reads it. */
export interface FeedRow {
  seq: number;
  resource: string;
  record_id: string;
  kind: string;
}

/** The feed's resources whose rows lead to issuances (the others touch none: projects, schema changes, findings). */
const TOUCHING = ['issuances', 'custody_issuances', 'unit_operations', 'custody_units', 'operations'];

/** The touching feed rows after `after`, oldest first (written here: only the roots wire feed/ in). */
export const touchingFeed = (after: number, limit: number) =>
  sql`SELECT seq, resource, record_id, kind FROM changes
       WHERE seq > ${after} AND resource IN (${valueList(TOUCHING)})
       ORDER BY seq ${limitRows(limit)}`;

/** The newest seq in the feed (0 when empty). */
export const feedHead = () => sql`SELECT coalesce(max(seq), 0) AS head FROM changes`;

/** The feed rows' record ids, by how they lead to an issuance. */
export interface TouchedKeys {
  /** `issuances`, `custody_issuances`: the id is the issuance's. */
  issuances: Set<string>;
  /** `unit_operations` changed or removed: a public log entry, whose `unitsIssuanceID` names it. */
  logEntries: Set<string>;
  /**
   * `unit_operations` inserted: a new log entry can only match a retirement, so it leads to the
   * issuances with a retirement missing (one read, however long the log: a first sync inserts it all).
   */
  logGrew: boolean;
  /** `custody_units`: a unit, led to by its operations in the ledger or its custody read. */
  units: Set<string>;
  /** `operations`: a reported operation, led to by its ledger entry. */
  refs: Set<string>;
}

/**
 * Sorts feed rows by what they name (pure). Rows of other resources (projects, schema changes, and
 * the reconciliation's own findings) touch no issuance.
 */
export function touchedKeys(rows: readonly Pick<FeedRow, 'resource' | 'record_id' | 'kind'>[]): TouchedKeys {
  const out: TouchedKeys = {
    issuances: new Set(),
    logEntries: new Set(),
    logGrew: false,
    units: new Set(),
    refs: new Set(),
  };
  for (const row of rows) {
    const id = String(row.record_id);
    switch (row.resource) {
      case 'issuances':
      case 'custody_issuances':
        out.issuances.add(id);
        break;
      case 'unit_operations':
        if (row.kind === 'insert') out.logGrew = true;
        else out.logEntries.add(id);
        break;
      case 'custody_units':
        out.units.add(id);
        break;
      case 'operations':
        out.refs.add(id);
        break;
    }
  }
  return out;
}

/** The issuances of public log entries. */
export const issuancesOfLogEntries = (ids: readonly string[]) =>
  sql`SELECT DISTINCT "unitsIssuanceID" AS issuance_id FROM unit_operations
       WHERE "unitsOperationID" IN (${valueList(ids)}) AND "unitsIssuanceID" IS NOT NULL`;

/** The issuances with a retirement missing from the log (what a new log entry may resolve). */
export const issuancesMissingRetirements = () =>
  sql`SELECT DISTINCT issuance_id FROM reconciliation_findings
       WHERE kind = 'retirement-missing' AND resolved_at IS NULL AND issuance_id IS NOT NULL`;

/** The issuances of units: those of the operations reported on them, and their custody read's. */
export const issuancesOfUnits = (ids: readonly string[]) =>
  sql`SELECT issuance_id FROM reconciliation_ledger
       WHERE unit_id IN (${valueList(ids)}) AND issuance_id IS NOT NULL
      UNION
      SELECT "unitsIssuanceID" AS issuance_id FROM custody_units
       WHERE "unitsOperationID" IN (${valueList(ids)}) AND "unitsIssuanceID" IS NOT NULL`;

/** The issuance and unit of reported operations, as the ledger read them from their bodies. */
export const ledgerOfOperations = (refs: readonly string[]) =>
  sql`SELECT l.issuance_id, l.unit_id FROM reconciliation_ledger l JOIN outbox o ON o.id = l.outbox_id
       WHERE o."marketplaceTransactionRef" IN (${valueList(refs)})`;

/**
 * Which of `ids` a pass could find anything on: issuances with reported operations, a deposit, or
 * an open finding. A sync of the whole log touches every issuance; the marketplace's books name few.
 */
export const relevantIssuances = (ids: readonly string[]) =>
  sql`SELECT DISTINCT issuance_id AS id FROM reconciliation_ledger WHERE issuance_id IN (${valueList(ids)})
      UNION
      SELECT id FROM custody_ids WHERE kind = 'issuances' AND source = 'webhook' AND id IN (${valueList(ids)})
      UNION
      SELECT issuance_id AS id FROM reconciliation_findings
       WHERE resolved_at IS NULL AND issuance_id IN (${valueList(ids)})`;

/** Runs `statement` over `ids` in groups of GROUP, each row handed to `take`. */
async function eachGroup<R extends object>(
  read: Reader,
  ids: ReadonlySet<string>,
  statement: (group: readonly string[]) => Sql,
  take: (row: R) => void,
): Promise<void> {
  const all = [...ids];
  for (let i = 0; i < all.length; i += GROUP)
    for (const row of await read<R>(statement(all.slice(i, i + GROUP)))) take(row);
}

/**
 * The issuance ids `keys` lead to that a pass could find anything on (the ledger must have caught
 * up with the outbox first, so an operation queued before its feed row was read is found). An
 * operation on a unit alone leads to the issuances of that unit.
 */
export async function issuancesTouched(read: Reader, keys: TouchedKeys): Promise<Set<string>> {
  const out = new Set(keys.issuances);
  const units = new Set(keys.units);
  const add = (id: unknown) => {
    if (id !== null && id !== undefined && String(id) !== '') out.add(String(id));
  };
  await eachGroup<{ issuance_id: unknown; unit_id: unknown }>(read, keys.refs, ledgerOfOperations, (r) => {
    if (r.issuance_id !== null) add(r.issuance_id);
    else if (r.unit_id !== null) units.add(String(r.unit_id));
  });
  await eachGroup<{ issuance_id: unknown }>(read, keys.logEntries, issuancesOfLogEntries, (r) =>
    add(r.issuance_id),
  );
  await eachGroup<{ issuance_id: unknown }>(read, units, issuancesOfUnits, (r) => add(r.issuance_id));
  if (keys.logGrew)
    for (const r of await read<{ issuance_id: unknown }>(issuancesMissingRetirements())) add(r.issuance_id);
  const relevant = new Set<string>();
  await eachGroup<{ id: unknown }>(read, out, relevantIssuances, (r) => relevant.add(String(r.id)));
  return relevant;
}
