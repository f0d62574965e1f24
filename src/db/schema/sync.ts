import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/** A feed of every insert, update and removal in the mirror, tailed by `seq`. */
export const changes = sqliteTable(
  'changes',
  {
    seq: integer('seq').primaryKey({ autoIncrement: true }),
    resource: text('resource').notNull(),
    record_id: text('record_id').notNull(),
    /** `insert`, `update` or `remove`. */
    kind: text('kind').notNull(),
    at: text('at').notNull(),
  },
  (t) => [index('changes_record_idx').on(t.resource, t.record_id)],
);

/** One row per sync run of one resource. */
export const syncRuns = sqliteTable(
  'sync_runs',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    resource: text('resource').notNull(),
    /** `full` or `incremental`. */
    mode: text('mode').notNull(),
    /** What started it: `startup`, `schedule`, `manual`, `api`, `webhook`. */
    trigger: text('trigger').notNull(),
    started_at: text('started_at').notNull(),
    finished_at: text('finished_at'),
    /** `running`, `succeeded`, `failed`, `interrupted`. */
    status: text('status').notNull(),
    fetched: integer('fetched').notNull().default(0),
    inserted: integer('inserted').notNull().default(0),
    updated: integer('updated').notNull().default(0),
    removed: integer('removed').notNull().default(0),
    unchanged: integer('unchanged').notNull().default(0),
    quarantined: integer('quarantined').notNull().default(0),
    pages: integer('pages').notNull().default(0),
    error: text('error'),
    /** The run whose checkpoint this one resumed, if any. */
    resumed_from: integer('resumed_from'),
    /** PID of the process running it, to tell a dead run from a live one. */
    pid: integer('pid'),
  },
  (t) => [index('sync_runs_resource_idx').on(t.resource, t.id)],
);

/** Where an unfinished scan of a resource stands; committed with each page's upserts. */
export const syncCheckpoints = sqliteTable('sync_checkpoints', {
  resource: text('resource').primaryKey(),
  run_id: integer('run_id').notNull(),
  mode: text('mode').notNull(),
  next_offset: integer('next_offset').notNull(),
  scan_started_at: text('scan_started_at').notNull(),
  /** Loop-specific state as JSON (e.g. the units log position). */
  state: text('state'),
  updated_at: text('updated_at').notNull(),
});

/** Keys seen by the scan in progress: tombstones are decided from this once the scan completes. */
export const syncSeen = sqliteTable(
  'sync_seen',
  {
    resource: text('resource').notNull(),
    record_id: text('record_id').notNull(),
  },
  (t) => [primaryKey({ columns: [t.resource, t.record_id] })],
);

/** Records that could not be read at all, kept with the reason so nothing is dropped silently. */
export const quarantine = sqliteTable(
  'quarantine',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    resource: text('resource').notNull(),
    record_id: text('record_id'),
    run_id: integer('run_id'),
    reason: text('reason').notNull(),
    raw: text('raw').notNull(),
    at: text('at').notNull(),
    resolved_at: text('resolved_at'),
  },
  (t) => [index('quarantine_open_idx').on(t.resource, t.resolved_at)],
);

/** Ids in the marketplace's custody whose data the custody sync reads, and where each came from. */
export const custodyIds = sqliteTable(
  'custody_ids',
  {
    /** `projects`, `issuances` or `units`. */
    kind: text('kind').notNull(),
    id: text('id').notNull(),
    /** `config`, `outbox` or `webhook`. */
    source: text('source').notNull(),
    added_at: text('added_at').notNull(),
    /** Set when the operator answers 404: the id left custody. */
    ended_at: text('ended_at'),
  },
  (t) => [primaryKey({ columns: [t.kind, t.id] })],
);
