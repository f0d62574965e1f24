import { type FieldDef, ISSUANCE_FIELDS, PROJECT_FIELDS, UNIT_FIELDS } from '../../operator/fields.js';
import { type ColumnKinds, type ColumnTypes, type IndexSpec, index, liveIndex, table } from './kinds.js';

/**
 * Mirror tables: one column per interface field, named exactly as the interface spells it (quoted
 * identifiers on PostgreSQL: `"projectID"`), plus the bookkeeping columns SQL readers rely on
 * (`_raw`, `_first_seen_at`, `_last_seen_at`, `_removed_at`). Keys are text so that `12` and `"12"`
 * are the same record. Interface dates stay text on both stores (YYYY-MM-DD sorts as text): an
 * operator's odd date is data to keep, not a row to refuse.
 */
function fieldColumn<C extends ColumnTypes>(k: ColumnKinds<C>, field: FieldDef) {
  switch (field.type) {
    case 'id':
      return k.key();
    case 'int':
      return k.int64();
    case 'bool':
      return k.bool();
    case 'number':
      return k.real();
    case 'textList':
      // A JSON array, so PostgreSQL readers can use jsonb operators on it.
      return k.json();
    default:
      return k.text();
  }
}

/**
 * The field columns, then the bookkeeping ones, then `extra`. Object.assign rather than a spread: a
 * spread's type drops the field columns' index signature, and indexes on them would not type-check.
 */
function mirrorColumns<C extends ColumnTypes, E extends object>(
  k: ColumnKinds<C>,
  fields: readonly FieldDef[],
  extra: E,
) {
  const columns: Record<string, ReturnType<typeof fieldColumn<C>>> = {};
  for (const field of fields) columns[field.name] = fieldColumn(k, field);
  const bookkeeping = {
    /** The record's JSON exactly as received, unknown fields kept. */
    _raw: k.json().notNull(),
    /** Content hash of the record as received, so an unchanged record costs no write. */
    _hash: k.text().notNull(),
    _first_seen_at: k.at().notNull(),
    _last_seen_at: k.at().notNull(),
    /** Set when a complete scan no longer finds the record; cleared if it returns. */
    _removed_at: k.at(),
  };
  return Object.assign(columns, bookkeeping, extra);
}

export const projectsTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  table('projects', mirrorColumns(k, PROJECT_FIELDS, {}), {
    indexes: [index('projects_status_idx', 'projectStatus'), index('projects_country_idx', 'projectCountry')],
  });

export const issuancesTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  table('issuances', mirrorColumns(k, ISSUANCE_FIELDS, {}), {
    indexes: [index('issuances_project_idx', 'issuanceProjectId')],
  });

/**
 * The filter indexes of GET /v1/units: each also gives the list's order (key, or date then key when
 * dates are filtered), so a page costs its own rows whatever the mirror's size. No statement of the
 * sync's write path uses them (it goes by key and `_position`), so a first full load builds them
 * after its rows are in, one sort each instead of a random insert per row (mirror/filterIndexes.ts,
 * which spells their DDL from this list; drizzle/0004_units_filter_idx.sql created them).
 */
export const UNIT_FILTER_INDEXES = [
  index('unit_operations_issuance_key_idx', 'unitsIssuanceID', 'unitsOperationID'),
  index('unit_operations_status_key_idx', 'unitsStatus', 'unitsOperationID'),
  index('unit_operations_date_key_idx', 'unitsDate', 'unitsOperationID'),
  index('unit_operations_status_date_key_idx', 'unitsStatus', 'unitsDate', 'unitsOperationID'),
] as const;

/**
 * The keys of the live rows, which a full scan's counts read (its record cap at the start, the rows
 * it did not see at the end) instead of every page of a table whose rows hold each record's JSON:
 * at a million unit operations 19 ms instead of 234, and 335 instead of 570 for the unseen rows.
 * Kept up row by row (never deferred): the counts name it (Dialect.indexedBy), so it is always there.
 */
export const LIVE_INDEXES: Readonly<Record<string, IndexSpec<string>>> = {
  unit_operations: liveIndex('unit_operations_live_key_idx', 'unitsOperationID'),
};

/** The filter indexes of each mirror table that has some, by table name. */
export const FILTER_INDEXES: Readonly<Record<string, readonly IndexSpec<string>[]>> = {
  unit_operations: UNIT_FILTER_INDEXES,
};

export const unitOperationsTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  table(
    'unit_operations',
    mirrorColumns(k, UNIT_FIELDS, {
      /** Position of the operation in the operator's log, for incremental sync. */
      _position: k.int64(),
    }),
    {
      // `_position` is the sync's own (the units log's overlap); the filter indexes are the API's.
      indexes: [
        ...UNIT_FILTER_INDEXES,
        index('unit_operations_position_idx', '_position'),
        LIVE_INDEXES.unit_operations!,
      ],
    },
  );

/** The mirror of records in the marketplace's custody, read one by one (custody_ids). */
const custodyTable = <C extends ColumnTypes, N extends string>(
  k: ColumnKinds<C>,
  name: N,
  fields: readonly FieldDef[],
) =>
  table(
    name,
    mirrorColumns(k, fields, {
      /** Set when the operator answers 404 for this id: it left custody (the row is kept). */
      _custody_ended_at: k.at(),
    }),
  );

export const custodyProjectsTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  custodyTable(k, 'custody_projects', PROJECT_FIELDS);
export const custodyIssuancesTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  custodyTable(k, 'custody_issuances', ISSUANCE_FIELDS);
export const custodyUnitsTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  custodyTable(k, 'custody_units', UNIT_FIELDS);
