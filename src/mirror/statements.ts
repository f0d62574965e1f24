import { join, raw, Sql, sql, typed } from '../store/sql.js';
import type { RowWrite } from './batchPlan.js';
import type { RunCounts } from './bookkeeping.js';
import type { TableDef } from './resources.js';
import type { Checkpoint } from './scan/checkpoint.js';

/**
 * The mirror's statements, written once for both stores (src/store/sql.ts renders them): the
 * mirror tables (lookup, upsert, positions, tombstones, overlap, custody) and the sync
 * bookkeeping (runs, checkpoints, seen keys, quarantine, custody ids). Rows go in multi-row
 * `VALUES` lists, so a batch costs a few statements whatever its size. Identifiers come from the
 * field lists in operator/fields.ts, never from input. Vocabulary: `resource` is the sync target
 * (`units`, in `sync_runs` and `sync_checkpoints`); `table` the mirror table (`unit_operations`,
 * in `changes`, `sync_seen` and `quarantine`).
 */

/** An identifier quoted for both dialects. */
export const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** A row value as the planner holds it (SQLite's forms: booleans 0/1, lists as JSON text). */
type Value = string | number | null;

/** The parenthesised list of a row's values: `(v1, v2, ...)`. */
function tuple(values: readonly unknown[]): Sql {
  return new Sql(['(', ...values.slice(1).map(() => ', '), ')'], values);
}

/** `(v1, ...), (...)`: the rows of a `VALUES` list. */
const valuesList = (rows: readonly (readonly unknown[])[]) => join(rows.map(tuple), ', ');

/** `IN (...)` of `values` (never empty: callers skip an empty list). */
const inList = (values: readonly unknown[]) => sql`IN ${tuple(values)}`;

/** The text of one mirror table's statements, built once per table. */
interface TableText {
  t: string;
  k: string;
  insertCols: string;
  sets: string;
  rowsOf: string;
  unseen: string;
}

const texts = new Map<string, TableText>();

function tableText(def: TableDef): TableText {
  let text = texts.get(def.table);
  if (text) return text;
  const t = quoteIdent(def.table);
  const k = quoteIdent(def.key);
  const cols = def.fields.map((f) => quoteIdent(f.name));
  const extra = def.positioned ? ['_position'] : [];
  const sets = [
    ...cols.filter((c) => c !== k).map((c) => `${c} = excluded.${c}`),
    '_raw = excluded._raw',
    '_hash = excluded._hash',
    '_last_seen_at = excluded._last_seen_at',
    '_removed_at = NULL',
    ...(def.custody ? ['_custody_ended_at = NULL'] : []),
    ...extra.map((c) => `${c} = excluded.${c}`),
  ];
  text = {
    t,
    k,
    insertCols: [...cols, '_raw', '_hash', '_first_seen_at', '_last_seen_at', ...extra].join(', '),
    sets: sets.join(', '),
    rowsOf: `SELECT m.${k} AS key, m._hash AS hash, m._removed_at IS NOT NULL AS removed,
        ${def.positioned ? 'm._position' : 'NULL'} AS position,
        ${def.custody ? 'm._custody_ended_at IS NOT NULL' : 'false'} AS ended, false AS seen
      FROM ${t} m WHERE m.${k} `,
    unseen: `_removed_at IS NULL AND NOT EXISTS (SELECT 1 FROM sync_seen s WHERE s.resource = `,
  };
  texts.set(def.table, text);
  return text;
}

/** A row of {@link lookupRows}: a mirror row (seen false) or a key the scan saw (seen true). */
export interface LookupRow {
  key: string;
  hash: string | null;
  removed: unknown;
  position: unknown;
  ended: unknown;
  seen: unknown;
}

/** The rows `keys` have (only those that exist) and, when tracked, the keys the scan saw. */
export function lookupRows(def: TableDef, keys: readonly string[], trackSeen: boolean): Sql {
  const { rowsOf } = tableText(def);
  const rows = sql`${raw(rowsOf)}${inList(keys)}`;
  if (!trackSeen) return rows;
  return sql`${rows} UNION ALL SELECT record_id, NULL, false, NULL, false, true FROM sync_seen
    WHERE resource = ${def.table} AND record_id ${inList(keys)}`;
}

/**
 * Writes `rows` at `at`: rows that exist are updated (their first-seen time kept); new ones are
 * inserted without ON CONFLICT's speculative insertion, since the run's lock leaves no other
 * writer of the table.
 */
export function upsertRows(def: TableDef, rows: readonly RowWrite[], at: string, existing: boolean): Sql {
  const { t, k, insertCols, sets } = tableText(def);
  const tuples = rows.map((r) => {
    const values: Value[] = [...r.values, r.raw, r.hash, at, at];
    if (def.positioned) values.push(r.position);
    return values;
  });
  const conflict = existing ? ` ON CONFLICT (${k}) DO UPDATE SET ${sets}` : '';
  return sql`INSERT INTO ${raw(t)} (${raw(insertCols)}) VALUES ${valuesList(tuples)}${raw(conflict)}`;
}

/** Moves rows in the units log (same content, new position). */
export function setPositions(def: TableDef, positions: readonly (readonly [string, number])[]): Sql {
  const { t, k } = tableText(def);
  const tuples = positions.map(([key, at]) => [typed(key, 'text'), typed(at, 'int8')]);
  return sql`UPDATE ${raw(t)} SET _position = v.column2 FROM (VALUES ${valuesList(tuples)}) AS v
    WHERE ${raw(t)}.${raw(k)} = v.column1`;
}

export const liveCount = (def: TableDef) =>
  sql`SELECT count(*) AS n FROM ${raw(tableText(def).t)} WHERE _removed_at IS NULL`;

/** Whether any row is live: what a scan's start needs, without counting a million rows. */
export const hasLive = (def: TableDef) =>
  sql`SELECT EXISTS (SELECT 1 FROM ${raw(tableText(def).t)} WHERE _removed_at IS NULL) AS live`;

const unseenWhere = (def: TableDef) => {
  const { t, k, unseen } = tableText(def);
  return sql`${raw(unseen)}${def.table} AND s.record_id = ${raw(t)}.${raw(k)})`;
};

/** Live rows the current scan has not seen. */
export const unseenCount = (def: TableDef) =>
  sql`SELECT count(*) AS n FROM ${raw(tableText(def).t)} WHERE ${unseenWhere(def)}`;

/** Marks every live row the scan has not seen as removed, returning their keys. */
export const tombstoneUnseen = (def: TableDef, at: string) => {
  const { t, k } = tableText(def);
  return sql`UPDATE ${raw(t)} SET _removed_at = ${at} WHERE ${unseenWhere(def)} RETURNING ${raw(k)} AS key`;
};

/** Live rows of the units log at positions [from, to): key, hash, position. */
export const overlapRows = (def: TableDef, from: number, to: number) => {
  const { t, k } = tableText(def);
  return sql`SELECT ${raw(k)} AS key, _hash AS hash, _position AS position FROM ${raw(t)}
    WHERE _removed_at IS NULL AND _position >= ${from} AND _position < ${to}`;
};

/** Marks a custody row out of custody (its rowCount: whether it was in custody). */
export const endCustody = (def: TableDef, key: string, at: string) => {
  const { t, k } = tableText(def);
  return sql`UPDATE ${raw(t)} SET _custody_ended_at = ${at} WHERE ${raw(k)} = ${key} AND _custody_ended_at IS NULL`;
};

// --- bookkeeping ---

/** Records keys as seen by the scan (a key seen before stays as it is). */
export const addSeen = (table: string, keys: readonly string[]) =>
  sql`INSERT INTO sync_seen (resource, record_id) VALUES ${valuesList(keys.map((key) => [table, key]))}
    ON CONFLICT DO NOTHING`;

export const clearSeen = (table: string) => sql`DELETE FROM sync_seen WHERE resource = ${table}`;

/** Quarantine rows of one run at `at`. */
export const addQuarantine = (
  table: string,
  runId: number,
  at: string,
  rows: readonly { key: string | null; reason: string; raw: string }[],
) =>
  sql`INSERT INTO quarantine (resource, record_id, run_id, reason, raw, at)
    VALUES ${valuesList(rows.map((r) => [table, r.key, runId, r.reason, r.raw, at]))}`;

/** A `sync_checkpoints` row as read (times as ISO text on both stores). */
export interface CheckpointRow {
  resource: string;
  run_id: number;
  mode: string;
  next_offset: number;
  scan_started_at: string;
  state: string | null;
}

export const readCheckpoint = (resource: string) =>
  sql`SELECT * FROM sync_checkpoints WHERE resource = ${resource}`;

export const putCheckpoint = (cp: Checkpoint, at: string) =>
  sql`INSERT INTO sync_checkpoints (resource, run_id, mode, next_offset, scan_started_at, state, updated_at)
    VALUES (${cp.resource}, ${cp.runId}, ${cp.mode}, ${cp.nextOffset}, ${cp.scanStartedAt},
      ${JSON.stringify(cp.state)}, ${at})
    ON CONFLICT (resource) DO UPDATE SET run_id = excluded.run_id, mode = excluded.mode,
      next_offset = excluded.next_offset, scan_started_at = excluded.scan_started_at,
      state = excluded.state, updated_at = excluded.updated_at`;

export const deleteCheckpoint = (resource: string) =>
  sql`DELETE FROM sync_checkpoints WHERE resource = ${resource}`;

/** The `sync_runs` count columns set from a RunCounts (in RunCounts' order). */
const countSets = (c: RunCounts) =>
  sql`fetched = ${c.fetched}, inserted = ${c.inserted}, updated = ${c.updated}, removed = ${c.removed},
    unchanged = ${c.unchanged}, quarantined = ${c.quarantined}, pages = ${c.pages}`;

export const progress = (runId: number, c: RunCounts) =>
  sql`UPDATE sync_runs SET ${countSets(c)} WHERE id = ${runId}`;

/** A run's row, `running` (RETURNING its id). */
export const startRun = (
  resource: string,
  mode: string,
  trigger: string,
  at: string,
  resumedFrom: number | null,
) =>
  sql`INSERT INTO sync_runs (resource, mode, trigger, started_at, status, resumed_from, pid)
    VALUES (${resource}, ${mode}, ${trigger}, ${at}, 'running', ${typed(resumedFrom, 'int8')}, ${process.pid})
    RETURNING id`;

export const setRunMode = (runId: number, mode: string) =>
  sql`UPDATE sync_runs SET mode = ${mode} WHERE id = ${runId}`;

/**
 * A run's end. Only a row still running: one marked interrupted meanwhile (its process or replica
 * judged dead, its lock lost) keeps what the marking wrote.
 */
export const finishRun = (runId: number, at: string, status: string, error: string | null, c: RunCounts) =>
  sql`UPDATE sync_runs SET finished_at = ${at}, status = ${status}, error = ${typed(error, 'text')}, ${countSets(c)}
    WHERE id = ${runId} AND status = 'running'`;

/** A `sync_runs` row still marked running. */
export interface RunningRow {
  id: number;
  resource: string;
  pid: number | null;
}

export const runningRuns = () => sql`SELECT id, resource, pid FROM sync_runs WHERE status = 'running'`;

/** Marks runs `interrupted` (`which`: a condition on `sync_runs`), returning id, resource, pid. */
export const interruptRuns = (at: string, reason: string, which: Sql) =>
  sql`UPDATE sync_runs SET status = 'interrupted', finished_at = ${at}, error = ${reason}
    WHERE ${which} RETURNING id, resource, pid`;

/** Bodies of this marketplace's accepted or approved Tokenizations (`wireSpelling` or the default). */
export const tokenizationBodies = (wireSpelling: string) =>
  sql`SELECT body FROM outbox WHERE lower("operationType") IN (lower(${typed(wireSpelling, 'text')}), 'tokenization')
    AND state IN ('accepted', 'approved')`;

/** Adds custody ids at `at` (an id already there is left as it is). */
export const addCustodyIds = (at: string, adds: readonly { kind: string; id: string; source: string }[]) =>
  sql`INSERT INTO custody_ids (kind, id, source, added_at)
    VALUES ${valuesList(adds.map((a) => [a.kind, a.id, a.source, at]))} ON CONFLICT DO NOTHING`;

/** Ids of `kind` still in custody, with when they were added (the caller orders them). */
export const activeCustodyIds = (kind: string) =>
  sql`SELECT id, added_at FROM custody_ids WHERE kind = ${kind} AND ended_at IS NULL`;

/** An id left custody (once). */
export const endCustodyId = (kind: string, id: string, at: string) =>
  sql`UPDATE custody_ids SET ended_at = ${at} WHERE kind = ${kind} AND id = ${id} AND ended_at IS NULL`;
