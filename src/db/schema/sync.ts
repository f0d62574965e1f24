import { type ColumnKinds, type ColumnTypes, index, table, uniqueIndex } from './kinds.js';

/** A feed of every insert, update and removal in the mirror, tailed by `seq`. */
export const changesTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  table(
    'changes',
    {
      seq: k.rowId(),
      resource: k.text().notNull(),
      record_id: k.text().notNull(),
      /** `insert`, `update` or `remove`. */
      kind: k.text().notNull(),
      at: k.at().notNull(),
    },
    { indexes: [index('changes_record_idx', 'resource', 'record_id')] },
  );

/** One row per sync run of one resource. */
export const syncRunsTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  table(
    'sync_runs',
    {
      id: k.rowId(),
      resource: k.text().notNull(),
      /** `full` or `incremental`. */
      mode: k.text().notNull(),
      /** What started it: `startup`, `schedule`, `manual`, `api`, `webhook`. */
      trigger: k.text().notNull(),
      started_at: k.at().notNull(),
      finished_at: k.at(),
      /** `running`, `succeeded`, `failed`, `interrupted`. */
      status: k.text().notNull(),
      fetched: k.count(),
      inserted: k.count(),
      updated: k.count(),
      removed: k.count(),
      unchanged: k.count(),
      quarantined: k.count(),
      pages: k.count(),
      error: k.text(),
      /** The run whose checkpoint this one resumed, if any. */
      resumed_from: k.int64(),
      /** PID of the process running it, to tell a dead run from a live one. */
      pid: k.int(),
    },
    { indexes: [index('sync_runs_resource_idx', 'resource', 'id')] },
  );

/** Where an unfinished scan of a resource stands; committed with each page's upserts. */
export const syncCheckpointsTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  table('sync_checkpoints', {
    resource: k.key(),
    run_id: k.int64().notNull(),
    mode: k.text().notNull(),
    next_offset: k.int64().notNull(),
    scan_started_at: k.at().notNull(),
    /** Loop-specific state as JSON (e.g. the units log position), kept as the loop wrote it. */
    state: k.text(),
    updated_at: k.at().notNull(),
  });

/**
 * Keys seen by the scan in progress: tombstones are decided from this once the scan completes. On
 * SQLite a WITHOUT ROWID table (drizzle/0010, written by hand: drizzle has no word for it).
 */
export const syncSeenTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  table(
    'sync_seen',
    { resource: k.text().notNull(), record_id: k.text().notNull() },
    { primaryKey: ['resource', 'record_id'] },
  );

/** Records that could not be read at all, kept with the reason so nothing is dropped silently. */
export const quarantineTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  table(
    'quarantine',
    {
      id: k.rowId(),
      resource: k.text().notNull(),
      record_id: k.text(),
      run_id: k.int64(),
      reason: k.text().notNull(),
      /** Its place in the units log, so a record quarantined for its shape is re-applied where it stood. */
      position: k.int64(),
      /** What was received, as text: it may not be JSON at all. */
      raw: k.text().notNull(),
      at: k.at().notNull(),
      resolved_at: k.at(),
    },
    { indexes: [index('quarantine_open_idx', 'resource', 'resolved_at')] },
  );

/** Ids in the marketplace's custody whose data the custody sync reads, and where each came from. */
export const custodyIdsTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  table(
    'custody_ids',
    {
      /** `projects`, `issuances` or `units`. */
      kind: k.text().notNull(),
      id: k.text().notNull(),
      /** `config`, `outbox` or `webhook`. */
      source: k.text().notNull(),
      added_at: k.at().notNull(),
      /** Set when the operator answers 404: the id left custody. */
      ended_at: k.at(),
    },
    { primaryKey: ['kind', 'id'] },
  );

/**
 * The operator's records as learned (issue 28, mirror/shape/): one row per resource (its table) and
 * field, updated when a scan shows something new and when a complete scan ends.
 */
export const schemaFieldsTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  table(
    'schema_fields',
    {
      resource: k.text().notNull(),
      field: k.text().notNull(),
      /** The JSON types seen, as a JSON array (`string`, `number`, `boolean`, `null`, `object`, `array`). */
      types: k.text().notNull(),
      /** A field mapped to a column: the types it takes there, as a JSON array (null: kept in `_raw` only). */
      admitted: k.text(),
      /** The column type (operator/fields.ts) `admitted` was learned under: a new mapping admits what was seen. */
      mapped_as: k.text(),
      /** An enum-like field (`sync.schema.enum_fields`): the values seen, as a JSON array. */
      enum_values: k.text(),
      /** The key field: the formats its values took (`integer`, `uuid`, `text`), as a JSON array. */
      key_formats: k.text(),
      /** Records of the last complete scan that had the field, and those where it was null. */
      present: k.count(),
      nulls: k.count(),
      /** Records that complete scan read (so absent = records - present). */
      records: k.count(),
      first_seen_at: k.at().notNull(),
      last_seen_at: k.at().notNull(),
      /** Set when a complete scan found no record with the field; cleared when it comes back. */
      removed_at: k.at(),
    },
    { primaryKey: ['resource', 'field'] },
  );

/** One row per change of the operator's records' shape, recorded once however many records show it. */
export const schemaChangesTable = <C extends ColumnTypes>(k: ColumnKinds<C>) =>
  table(
    'schema_changes',
    {
      id: k.rowId(),
      resource: k.text().notNull(),
      field: k.text().notNull(),
      /** `field-added`, `field-removed`, `type-changed`, `new-value` or `key-format-changed`. */
      kind: k.text().notNull(),
      /** What the field was (types, formats), if anything. */
      before: k.text(),
      /** What it is now: the new type, value or format; `absent` for a removed field. */
      after: k.text().notNull(),
      /** The field is mapped to a column of the mirror (a change there is critical). */
      mapped: k.flag(),
      first_seen_at: k.at().notNull(),
      last_seen_at: k.at().notNull(),
      /** The key of a record that showed it (null for a removed field). */
      example_key: k.text(),
      /** Records that showed it, over every run. */
      count: k.count(),
      /** The run that first saw it. */
      run_id: k.int64(),
    },
    {
      indexes: [
        uniqueIndex('schema_changes_what_idx', 'resource', 'field', 'kind', 'after'),
        index('schema_changes_seen_idx', 'first_seen_at'),
      ],
    },
  );
