import {
  type AnySQLiteColumn,
  index,
  integer,
  real,
  type SQLiteColumnBuilderBase,
  sqliteTable,
  text,
} from 'drizzle-orm/sqlite-core';
import { type FieldDef, ISSUANCE_FIELDS, PROJECT_FIELDS, UNIT_FIELDS } from '../../operator/fields.js';

/**
 * Mirror tables: one column per interface field, named exactly as the interface spells it, plus the
 * bookkeeping columns SQL readers rely on (`_raw`, `_first_seen_at`, `_last_seen_at`, `_removed_at`).
 * Keys are TEXT so that `12` and `"12"` are the same record.
 */
function fieldColumn(field: FieldDef): SQLiteColumnBuilderBase {
  switch (field.type) {
    case 'id':
      return text(field.name).primaryKey();
    case 'int':
    case 'bool':
      return integer(field.name);
    case 'number':
      return real(field.name);
    default:
      // text, date (YYYY-MM-DD sorts as text) and textList (stored as a JSON array)
      return text(field.name);
  }
}

/** A column of a table whose field columns are built from a list, by name. */
function col(table: object, name: string): AnySQLiteColumn {
  const column = (table as Record<string, AnySQLiteColumn | undefined>)[name];
  if (!column) throw new Error(`no column ${name}`);
  return column;
}

function mirrorColumns(fields: readonly FieldDef[], extra: Record<string, SQLiteColumnBuilderBase> = {}) {
  const columns: Record<string, SQLiteColumnBuilderBase> = {};
  for (const field of fields) columns[field.name] = fieldColumn(field);
  return {
    ...columns,
    /** The record's JSON exactly as received, unknown fields kept. */
    _raw: text('_raw').notNull(),
    /** Content hash of `_raw`, so an unchanged record costs no write. */
    _hash: text('_hash').notNull(),
    _first_seen_at: text('_first_seen_at').notNull(),
    _last_seen_at: text('_last_seen_at').notNull(),
    /** Set when a complete scan no longer finds the record; cleared if it returns. */
    _removed_at: text('_removed_at'),
    ...extra,
  };
}

export const projects = sqliteTable('projects', mirrorColumns(PROJECT_FIELDS), (t) => [
  index('projects_status_idx').on(col(t, 'projectStatus')),
  index('projects_country_idx').on(col(t, 'projectCountry')),
]);

export const issuances = sqliteTable('issuances', mirrorColumns(ISSUANCE_FIELDS), (t) => [
  index('issuances_project_idx').on(col(t, 'issuanceProjectId')),
]);

export const unitOperations = sqliteTable(
  'unit_operations',
  mirrorColumns(UNIT_FIELDS, {
    /** Position of the operation in the operator's log, for incremental sync. */
    _position: integer('_position'),
  }),
  // Each filter of GET /v1/units is an index that also gives the list's order (key, or date then
  // key when dates are filtered), so a page costs its own rows whatever the mirror's size.
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
  _custody_ended_at: text('_custody_ended_at'),
});

export const custodyProjects = sqliteTable('custody_projects', mirrorColumns(PROJECT_FIELDS, custodyExtra()));
export const custodyIssuances = sqliteTable(
  'custody_issuances',
  mirrorColumns(ISSUANCE_FIELDS, custodyExtra()),
);
export const custodyUnits = sqliteTable('custody_units', mirrorColumns(UNIT_FIELDS, custodyExtra()));
