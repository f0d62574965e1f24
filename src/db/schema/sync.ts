import { type ColumnKinds, type ColumnTypes, index, table } from './kinds.js';

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

/** Keys seen by the scan in progress: tombstones are decided from this once the scan completes. */
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
