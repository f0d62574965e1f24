import { inByteOrder } from '../../common/textForms.js';
import type { Sql } from '../../store/sql.js';
import {
  type ChangeRowRead,
  countShapeQuarantine,
  type FieldRow,
  fieldShape,
  iso,
  listChanges,
  listFields,
  listShapeQuarantine,
} from './shapeStatements.js';

/**
 * The learned shape and its history as readers see them (`GET /v1/schema`, `vcu-sync schema`, status),
 * on either store: `read` runs one statement outside any transaction.
 */

export type ShapeReader = <R extends object>(statement: Sql) => Promise<R[]>;

/** One field as learned. */
export interface FieldView {
  resource: string;
  field: string;
  types: string[];
  /** Mapped to a column: the types it takes there (null: kept in `_raw` only). */
  admitted: string[] | null;
  mapped: boolean;
  /** Enum-like fields: the values seen. */
  values: string[] | null;
  /** The key field: the formats its values took. */
  keyFormats: string[] | null;
  /** In the last complete scan: records read, records with the field, records where it was null. */
  records: number;
  present: number;
  nulls: number;
  absent: number;
  firstSeenAt: string;
  lastSeenAt: string;
  removedAt: string | null;
}

/** One change, as `schema_changes` holds it. */
export interface ChangeView {
  id: number;
  resource: string;
  field: string;
  kind: string;
  before: string | null;
  after: string;
  mapped: boolean;
  firstSeenAt: string;
  lastSeenAt: string;
  exampleKey: string | null;
  count: number;
  runId: number | null;
}

const listOf = <T>(set: Set<T> | null): T[] | null => (set === null ? null : [...set]);

export function fieldView(row: FieldRow): FieldView {
  const f = fieldShape(row);
  return {
    resource: row.resource,
    field: f.field,
    types: [...f.types],
    admitted: listOf(f.admitted),
    mapped: f.mappedAs !== null,
    values: listOf(f.enumValues),
    keyFormats: listOf(f.keyFormats),
    records: f.records,
    present: f.present,
    nulls: f.nulls,
    absent: Math.max(0, f.records - f.present),
    firstSeenAt: f.firstSeenAt,
    lastSeenAt: f.lastSeenAt,
    removedAt: f.removedAt,
  };
}

export function changeView(row: ChangeRowRead): ChangeView {
  return {
    id: Number(row.id),
    resource: row.resource,
    field: row.field,
    kind: row.kind,
    before: row.before,
    after: row.after,
    mapped: row.mapped === true || row.mapped === 1,
    firstSeenAt: iso(row.first_seen_at),
    lastSeenAt: iso(row.last_seen_at),
    exampleKey: row.example_key,
    count: Number(row.count),
    runId: row.run_id === null ? null : Number(row.run_id),
  };
}

/**
 * Fields in byte order of (resource, field), as SQLite's BINARY sorts them: a PostgreSQL database
 * collated for people would put `annualEstimatedUnits` before `ProjectStatusDate`, and both stores
 * must answer alike. Sorted here, not by the statement: a table has tens of fields.
 */
function byResourceThenField(a: FieldView, b: FieldView): number {
  return inByteOrder(`${a.resource}\u0000${a.field}`, `${b.resource}\u0000${b.field}`);
}

/** What `GET /v1/schema` and `vcu-sync schema` ask. */
export interface SchemaQuery {
  /** A mirror table (`projects`, `unit_operations`, `custody_units`, ...); null: every one. */
  resource: string | null;
  /** Changes first seen at or after this time (ISO); null: all. */
  since: string | null;
  /** Most changes returned, newest first. */
  limit: number;
}

/** A record the shape policy holds back, until a policy or mapping change admits it. */
export interface QuarantinedView {
  id: number;
  resource: string;
  key: string | null;
  reason: string;
  at: string;
}

/** What `GET /v1/schema` answers and `vcu-sync schema --json` prints. */
export interface SchemaAnswer {
  fields: FieldView[];
  changes: ChangeView[];
  /** Open shape-quarantined records: how many per resource, and the oldest (at most `limit`). */
  quarantined: { counts: Record<string, number>; records: QuarantinedView[] };
}

/** The learned shape (every field), the changes asked for (newest first) and what is held back. */
export async function readSchema(read: ShapeReader, query: SchemaQuery): Promise<SchemaAnswer> {
  const [fields, changes, held, counts] = await Promise.all([
    read<FieldRow>(listFields(query.resource)),
    read<ChangeRowRead>(listChanges(query.resource, query.since, query.limit)),
    read<{ id: number; resource: string; record_id: string | null; reason: string; at: string }>(
      listShapeQuarantine(query.resource, query.limit),
    ),
    read<{ resource: string; n: number }>(countShapeQuarantine()),
  ]);
  return {
    fields: fields.map(fieldView).sort(byResourceThenField),
    changes: changes.map(changeView),
    quarantined: {
      counts: Object.fromEntries(
        counts
          .filter((c) => query.resource === null || c.resource === query.resource)
          .map((c) => [c.resource, Number(c.n)]),
      ),
      records: held.map((r) => ({
        id: Number(r.id),
        resource: r.resource,
        key: r.record_id,
        reason: r.reason,
        at: iso(r.at),
      })),
    },
  };
}
