import { index, integer, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { at, int64, rowId } from './columns.js';

/** A feed of every insert, update and removal in the mirror, tailed by `seq`. */
export const changes = pgTable(
  'changes',
  {
    seq: rowId('seq'),
    resource: text('resource').notNull(),
    record_id: text('record_id').notNull(),
    /** `insert`, `update` or `remove`. */
    kind: text('kind').notNull(),
    at: at('at').notNull(),
  },
  (t) => [index('changes_record_idx').on(t.resource, t.record_id)],
);

/** One row per sync run of one resource. */
export const syncRuns = pgTable(
  'sync_runs',
  {
    id: rowId('id'),
    resource: text('resource').notNull(),
    /** `full` or `incremental`. */
    mode: text('mode').notNull(),
    /** What started it: `startup`, `schedule`, `manual`, `api`, `webhook`. */
    trigger: text('trigger').notNull(),
    started_at: at('started_at').notNull(),
    finished_at: at('finished_at'),
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
    resumed_from: int64('resumed_from'),
    /** PID of the process running it, to tell a dead run from a live one. */
    pid: integer('pid'),
  },
  (t) => [index('sync_runs_resource_idx').on(t.resource, t.id)],
);

/** Where an unfinished scan of a resource stands; committed with each page's upserts. */
export const syncCheckpoints = pgTable('sync_checkpoints', {
  resource: text('resource').primaryKey(),
  run_id: int64('run_id').notNull(),
  mode: text('mode').notNull(),
  next_offset: int64('next_offset').notNull(),
  scan_started_at: at('scan_started_at').notNull(),
  /** Loop-specific state as JSON (e.g. the units log position), kept as the loop wrote it. */
  state: text('state'),
  updated_at: at('updated_at').notNull(),
});

/** Keys seen by the scan in progress: tombstones are decided from this once the scan completes. */
export const syncSeen = pgTable(
  'sync_seen',
  {
    resource: text('resource').notNull(),
    record_id: text('record_id').notNull(),
  },
  (t) => [primaryKey({ columns: [t.resource, t.record_id] })],
);

/** Records that could not be read at all, kept with the reason so nothing is dropped silently. */
export const quarantine = pgTable(
  'quarantine',
  {
    id: rowId('id'),
    resource: text('resource').notNull(),
    record_id: text('record_id'),
    run_id: int64('run_id'),
    reason: text('reason').notNull(),
    /** What was received, as text: it may not be JSON at all. */
    raw: text('raw').notNull(),
    at: at('at').notNull(),
    resolved_at: at('resolved_at'),
  },
  (t) => [index('quarantine_open_idx').on(t.resource, t.resolved_at)],
);

/** Ids in the marketplace's custody whose data the custody sync reads, and where each came from. */
export const custodyIds = pgTable(
  'custody_ids',
  {
    /** `projects`, `issuances` or `units`. */
    kind: text('kind').notNull(),
    id: text('id').notNull(),
    /** `config`, `outbox` or `webhook`. */
    source: text('source').notNull(),
    added_at: at('added_at').notNull(),
    /** Set when the operator answers 404: the id left custody. */
    ended_at: at('ended_at'),
  },
  (t) => [primaryKey({ columns: [t.kind, t.id] })],
);
