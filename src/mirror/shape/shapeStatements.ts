import { join, limitRows, raw, sql, valueList } from '../../store/sql.js';
import { SHAPE_REASON_PREFIX } from './policy.js';
import type { ChangeKind, FieldShape, JsonType, ShapeChange } from './shapeTypes.js';

/**
 * The learned shape's statements, written once for both stores (src/store/sql.ts renders them):
 * `schema_fields` (what is known of each field) and `schema_changes` (one row per change).
 */

/** A `schema_fields` row as read. */
export interface FieldRow {
  resource: string;
  field: string;
  types: string;
  admitted: string | null;
  mapped_as: string | null;
  enum_values: string | null;
  key_formats: string | null;
  present: number;
  nulls: number;
  records: number;
  first_seen_at: string;
  last_seen_at: string;
  removed_at: string | null;
}

/** A `schema_changes` row as read. */
export interface ChangeRowRead {
  id: number;
  resource: string;
  field: string;
  kind: ChangeKind;
  before: string | null;
  after: string;
  mapped: boolean | number;
  first_seen_at: string;
  last_seen_at: string;
  example_key: string | null;
  count: number;
  run_id: number | null;
}

const list = <T>(text: string | null): Set<T> | null =>
  text === null ? null : new Set(JSON.parse(text) as T[]);
const text = (set: Set<string> | null) => (set === null ? null : JSON.stringify([...set].sort()));
/** Times compare as ISO text: both stores' readings are made the same shape here. */
export const iso = (at: string) => new Date(at).toISOString();

/** A field as the learner holds it, from its row. */
export function fieldShape(row: FieldRow): FieldShape {
  return {
    field: row.field,
    types: list<JsonType>(row.types) ?? new Set(),
    admitted: list<JsonType>(row.admitted),
    mappedAs: row.mapped_as,
    enumValues: list<string>(row.enum_values),
    keyFormats: list<string>(row.key_formats),
    present: Number(row.present),
    nulls: Number(row.nulls),
    records: Number(row.records),
    firstSeenAt: iso(row.first_seen_at),
    lastSeenAt: iso(row.last_seen_at),
    removedAt: row.removed_at === null ? null : iso(row.removed_at),
  };
}

export const readFields = (resource: string) =>
  sql`SELECT * FROM schema_fields WHERE resource = ${resource} ORDER BY field`;

export const readChangeKeys = (resource: string) =>
  sql`SELECT id, field, kind, after, first_seen_at FROM schema_changes WHERE resource = ${resource}`;

/** Writes fields as learned (counts too: they change only when a complete scan ends). */
export const upsertFields = (resource: string, fields: readonly FieldShape[]) =>
  sql`INSERT INTO schema_fields (resource, field, types, admitted, mapped_as, enum_values, key_formats,
      present, nulls, records, first_seen_at, last_seen_at, removed_at)
    VALUES ${join(
      fields.map(
        (f) =>
          sql`(${resource}, ${f.field}, ${text(f.types)}, ${text(f.admitted)}, ${f.mappedAs}, ${text(f.enumValues)},
            ${text(f.keyFormats)}, ${f.present}, ${f.nulls}, ${f.records}, ${f.firstSeenAt}, ${f.lastSeenAt}, ${f.removedAt})`,
      ),
      ', ',
    )}
    ON CONFLICT (resource, field) DO UPDATE SET types = excluded.types, admitted = excluded.admitted,
      mapped_as = excluded.mapped_as, enum_values = excluded.enum_values, key_formats = excluded.key_formats,
      present = excluded.present, nulls = excluded.nulls, records = excluded.records,
      last_seen_at = excluded.last_seen_at, removed_at = excluded.removed_at`;

/**
 * Changes to record: new ones inserted once, known ones (the key is taken) counting more records
 * (RETURNING every id, by which the feed and the subscribers name the new ones).
 */
export const insertChanges = (resource: string, runId: number, changes: readonly ShapeChange[]) =>
  sql`INSERT INTO schema_changes (resource, field, kind, before, after, mapped, first_seen_at, last_seen_at,
      example_key, count, run_id)
    VALUES ${join(
      changes.map(
        (c) =>
          sql`(${resource}, ${c.field}, ${c.kind}, ${c.before}, ${c.after}, ${c.mapped}, ${c.firstSeenAt},
            ${c.lastSeenAt}, ${c.exampleKey}, ${c.count}, ${runId})`,
      ),
      ', ',
    )}
    ON CONFLICT (resource, field, kind, after) DO UPDATE SET count = schema_changes.count + excluded.count,
      last_seen_at = excluded.last_seen_at
    RETURNING id, field, kind, after`;

/** The quarantine reasons the shape policy writes (to tell its records from unreadable ones). */
export const SHAPE_QUARANTINE_LIKE = `${SHAPE_REASON_PREFIX}%`;

/** The keys of the open quarantine rows the shape policy made. */
export const openShapeKeys = (table: string) =>
  sql`SELECT record_id FROM quarantine
    WHERE resource = ${table} AND resolved_at IS NULL AND reason LIKE ${SHAPE_QUARANTINE_LIKE}`;

/** Open quarantine rows the shape policy made, oldest first (re-applied by later runs). */
export const openShapeQuarantine = (table: string) =>
  sql`SELECT id, record_id, raw, position FROM quarantine
    WHERE resource = ${table} AND resolved_at IS NULL AND reason LIKE ${SHAPE_QUARANTINE_LIKE} ORDER BY id`;

/** Resolves the open shape-quarantine rows of these keys (written now, or quarantined again anew). */
export const resolveShapeQuarantine = (table: string, keys: readonly string[], at: string) =>
  sql`UPDATE quarantine SET resolved_at = ${at}
    WHERE resource = ${table} AND resolved_at IS NULL AND reason LIKE ${SHAPE_QUARANTINE_LIKE}
      AND record_id IN (${valueList(keys)})`;

/** Changes first seen at or after `since` (all when null), of one resource or all, newest first. */
export const listChanges = (resource: string | null, since: string | null, limit: number) =>
  sql`SELECT * FROM schema_changes WHERE 1 = 1
    ${resource === null ? raw('') : sql`AND resource = ${resource}`}
    ${since === null ? raw('') : sql`AND first_seen_at >= ${since}`}
    ORDER BY id DESC ${limitRows(limit)}`;

/** Every learned field, of one resource or all. */
export const listFields = (resource: string | null) =>
  resource === null
    ? sql`SELECT * FROM schema_fields ORDER BY resource, field`
    : sql`SELECT * FROM schema_fields WHERE resource = ${resource} ORDER BY field`;

/** Open shape-quarantined records, of one resource or all, oldest first (at most `limit`). */
export const listShapeQuarantine = (resource: string | null, limit: number) =>
  sql`SELECT id, resource, record_id, reason, at FROM quarantine
    WHERE resolved_at IS NULL AND reason LIKE ${SHAPE_QUARANTINE_LIKE}
    ${resource === null ? raw('') : sql`AND resource = ${resource}`}
    ORDER BY id ${limitRows(limit)}`;

/** How many shape-quarantined records are open, per resource. */
export const countShapeQuarantine = () =>
  sql`SELECT resource, count(*) AS n FROM quarantine
    WHERE resolved_at IS NULL AND reason LIKE ${SHAPE_QUARANTINE_LIKE} GROUP BY resource`;

/** The open shape-quarantined records of the units log at positions `from` to `to` (the overlap check). */
export const heldAt = (table: string, from: number, to: number) =>
  sql`SELECT record_id AS key, raw, position FROM quarantine
    WHERE resource = ${table} AND resolved_at IS NULL AND reason LIKE ${SHAPE_QUARANTINE_LIKE}
      AND position >= ${from} AND position < ${to} ORDER BY id`;
