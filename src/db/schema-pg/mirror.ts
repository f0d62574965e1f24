import {
  type AnyPgColumn,
  boolean,
  doublePrecision,
  index,
  jsonb,
  type PgColumnBuilderBase,
  pgTable,
  text,
} from 'drizzle-orm/pg-core';
import { type FieldDef, ISSUANCE_FIELDS, PROJECT_FIELDS, UNIT_FIELDS } from '../../operator/fields.js';
import { at, int64 } from './columns.js';

/**
 * Mirror tables: one column per interface field, named exactly as the interface spells it (quoted
 * identifiers: `"projectID"`), plus the bookkeeping columns SQL readers rely on. Keys are text so
 * that `12` and `"12"` are the same record; `_raw` is jsonb; times are timestamptz. Interface dates
 * stay text as on SQLite: an operator's odd date is data to keep, not a row to refuse.
 */
function fieldColumn(field: FieldDef): PgColumnBuilderBase {
  switch (field.type) {
    case 'id':
      return text(field.name).primaryKey();
    case 'int':
      return int64(field.name);
    case 'bool':
      return boolean(field.name);
    case 'number':
      return doublePrecision(field.name);
    case 'textList':
      // A JSON array on SQLite; here a jsonb array, so readers can use jsonb operators on it.
      return jsonb(field.name);
    default:
      // text, and date (YYYY-MM-DD sorts as text)
      return text(field.name);
  }
}

/** A column of a table whose field columns are built from a list, by name. */
function col(table: object, name: string): AnyPgColumn {
  const column = (table as Record<string, AnyPgColumn | undefined>)[name];
  if (!column) throw new Error(`no column ${name}`);
  return column;
}

function mirrorColumns(fields: readonly FieldDef[], extra: Record<string, PgColumnBuilderBase> = {}) {
  const columns: Record<string, PgColumnBuilderBase> = {};
  for (const field of fields) columns[field.name] = fieldColumn(field);
  return {
    ...columns,
    /** The record's JSON as received, unknown fields kept. */
    _raw: jsonb('_raw').notNull(),
    /** Content hash of the record as received, so an unchanged record costs no write. */
    _hash: text('_hash').notNull(),
    _first_seen_at: at('_first_seen_at').notNull(),
    _last_seen_at: at('_last_seen_at').notNull(),
    /** Set when a complete scan no longer finds the record; cleared if it returns. */
    _removed_at: at('_removed_at'),
    ...extra,
  };
}

export const projects = pgTable('projects', mirrorColumns(PROJECT_FIELDS), (t) => [
  index('projects_status_idx').on(col(t, 'projectStatus')),
  index('projects_country_idx').on(col(t, 'projectCountry')),
]);

export const issuances = pgTable('issuances', mirrorColumns(ISSUANCE_FIELDS), (t) => [
  index('issuances_project_idx').on(col(t, 'issuanceProjectId')),
]);

export const unitOperations = pgTable(
  'unit_operations',
  mirrorColumns(UNIT_FIELDS, {
    /** Position of the operation in the operator's log, for incremental sync. */
    _position: int64('_position'),
  }),
  // Each filter of GET /v1/units is an index that also gives the list's order (as in schema/mirror.ts).
  (t) => [
    index('unit_operations_issuance_key_idx').on(col(t, 'unitsIssuanceID'), col(t, 'unitsOperationID')),
    index('unit_operations_status_key_idx').on(col(t, 'unitsStatus'), col(t, 'unitsOperationID')),
    index('unit_operations_date_key_idx').on(col(t, 'unitsDate'), col(t, 'unitsOperationID')),
    index('unit_operations_status_date_key_idx').on(
      col(t, 'unitsStatus'),
      col(t, 'unitsDate'),
      col(t, 'unitsOperationID'),
    ),
    index('unit_operations_position_idx').on(col(t, '_position')),
  ],
);

const custodyExtra = () => ({
  /** Set when the operator answers 404 for this id: it left custody (the row is kept). */
  _custody_ended_at: at('_custody_ended_at'),
});

export const custodyProjects = pgTable('custody_projects', mirrorColumns(PROJECT_FIELDS, custodyExtra()));
export const custodyIssuances = pgTable('custody_issuances', mirrorColumns(ISSUANCE_FIELDS, custodyExtra()));
export const custodyUnits = pgTable('custody_units', mirrorColumns(UNIT_FIELDS, custodyExtra()));
