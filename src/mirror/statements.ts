import { LIVE_INDEXES } from '../db/schema/mirror.js';
import type { FieldType } from '../operator/fields.js';
import { indexedBy, raw, Sql, sql, typed } from '../store/sql.js';
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

/**
 * A statement of many rows: `head (v, v), (v, v) tail`, its text pieces kept per row count, so a
 * batch's statement costs only its values (its text is all a statement of that many rows has).
 */
class RowsShape {
  private readonly pieces: string[][] = [];

  constructor(
    private readonly head: string,
    private readonly width: number,
    private readonly tail: string,
    /** Between rows; inside a row values are always separated by `, `. */
    private readonly between = '), (',
  ) {}

  /** The statement of `values`, `width` of them per row, in row order. */
  of(values: readonly unknown[]): Sql {
    const rows = values.length / this.width;
    let strings = this.pieces[rows];
    if (strings === undefined) {
      strings = [this.head];
      for (let r = 0; r < rows; r++)
        for (let c = 0; c < this.width; c++)
          strings.push(c < this.width - 1 ? ', ' : r < rows - 1 ? this.between : this.tail);
      this.pieces[rows] = strings;
    }
    return new Sql(strings, values);
  }
}

/** `head k, k middle v link k, k)`: the keys twice around one value, pieces kept per key count. */
class KeysTwiceShape {
  private readonly pieces: string[][] = [];

  constructor(private readonly around: readonly [head: string, middle: string, link: string]) {}

  /** The statement of `values`: the keys, the one value between, the keys again. */
  of(values: readonly unknown[]): Sql {
    const keys = (values.length - 1) / 2;
    const [head, middle, link] = this.around;
    const list = (end: string) => [...Array.from({ length: keys - 1 }, () => ', '), end];
    this.pieces[keys] ??= [head, ...list(middle), link, ...list(')')];
    return new Sql(this.pieces[keys], values);
  }
}

/**
 * How a database takes many rows of an INSERT fastest (default: a `VALUES` list), given each
 * column's type and the rows' values, row after row. PostgreSQL's (../postgres/mirror.ts) binds
 * one array per column: a page of rows is a few parameters to parse, not thousands.
 */
export type RowsSource = (types: readonly string[], values: readonly unknown[]) => Sql;

/** `into` (`INSERT INTO t (columns)`), its rows, then `tail` (an ON CONFLICT clause). */
class InsertRows {
  private readonly list: RowsShape;

  constructor(
    private readonly into: string,
    private readonly types: readonly string[],
    private readonly tail = '',
  ) {
    this.list = new RowsShape(`${into} VALUES (`, types.length, `)${tail}`);
  }

  /** The insert of `values`, row after row, from `source` when the database has one. */
  of(values: readonly unknown[], source: RowsSource | undefined): Sql {
    if (!source) return this.list.of(values);
    return sql`${raw(this.into)} ${source(this.types, values)}${raw(this.tail)}`;
  }
}

/** A column's type, by the field type of operator/fields.ts. */
const COLUMN_TYPE: Record<FieldType, string> = {
  id: 'text',
  text: 'text',
  date: 'text',
  int: 'int8',
  number: 'float8',
  bool: 'bool',
  textList: 'jsonb',
};

/** The text of one mirror table's statements, built once per table. */
interface TableText {
  t: string;
  k: string;
  /** Values of one row written. */
  width: number;
  insert: InsertRows;
  upsert: InsertRows;
  /** The rows of keys; with the keys the scan saw. */
  lookup: RowsShape;
  lookupSeen: KeysTwiceShape;
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
  const insertCols = [...cols, '_raw', '_hash', '_first_seen_at', '_last_seen_at', ...extra];
  const rowsOf = `SELECT m.${k} AS key, m._hash AS hash, m._removed_at IS NOT NULL AS removed,
        ${def.positioned ? 'm._position' : 'NULL'} AS position,
        ${def.custody ? 'm._custody_ended_at IS NOT NULL' : 'false'} AS ended, false AS seen
      FROM ${t} m WHERE m.${k}`;
  const into = `INSERT INTO ${t} (${insertCols.join(', ')})`;
  const types = [
    ...def.fields.map((f) => COLUMN_TYPE[f.type]),
    'jsonb',
    'text',
    'timestamptz',
    'timestamptz',
    ...extra.map(() => 'int8'),
  ];
  text = {
    t,
    k,
    width: insertCols.length,
    insert: new InsertRows(into, types),
    upsert: new InsertRows(into, types, ` ON CONFLICT (${k}) DO UPDATE SET ${sets.join(', ')}`),
    lookup: new RowsShape(`${rowsOf} IN (`, 1, ')', ', '),
    lookupSeen: new KeysTwiceShape([
      `${rowsOf} IN (`,
      `) UNION ALL SELECT record_id, NULL, false, NULL, false, true FROM sync_seen
    WHERE resource = `,
      ' AND record_id IN (',
    ]),
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

/**
 * The rows `keys` have (only those that exist) and, when tracked, the keys the scan saw. One flat
 * statement (its pieces kept per key count), run once per part of every batch.
 */
export function lookupRows(def: TableDef, keys: readonly string[], trackSeen: boolean): Sql {
  const { lookup, lookupSeen } = tableText(def);
  if (!trackSeen) return lookup.of(keys);
  return lookupSeen.of([...keys, def.table, ...keys]);
}

/**
 * Writes `rows` at `at`: rows that exist are updated (their first-seen time kept); new ones are
 * inserted without ON CONFLICT's speculative insertion, since the run's lock leaves no other
 * writer of the table.
 */
export function upsertRows(
  def: TableDef,
  rows: readonly RowWrite[],
  at: string,
  existing: boolean,
  source?: RowsSource,
): Sql {
  const { width, insert, upsert } = tableText(def);
  const values: Value[] = new Array(rows.length * width);
  let i = 0;
  for (const r of rows) {
    for (const v of r.values) values[i++] = v;
    values[i++] = r.raw;
    values[i++] = r.hash;
    values[i++] = at;
    values[i++] = at;
    if (def.positioned) values[i++] = r.position;
  }
  return (existing ? upsert : insert).of(values, source);
}

/** Moves rows in the units log (same content, new position). */
export function setPositions(def: TableDef, positions: readonly (readonly [string, number])[]): Sql {
  const { t, k } = tableText(def);
  const values = positions.flatMap(([key, at]) => [typed(key, 'text'), typed(at, 'int8')]);
  return sql`UPDATE ${raw(t)} SET _position = v.column2 FROM (VALUES ${POSITIONS.of(values)}) AS v
    WHERE ${raw(t)}.${raw(k)} = v.column1`;
}

/** The table, reading its live-rows index where it has one (db/schema/mirror.ts, LIVE_INDEXES). */
const liveRowsOf = (def: TableDef): Sql => {
  const index = LIVE_INDEXES[def.table];
  return sql`${raw(tableText(def).t)}${index ? indexedBy(index.name) : raw('')}`;
};

export const liveCount = (def: TableDef) =>
  sql`SELECT count(*) AS n FROM ${liveRowsOf(def)} WHERE _removed_at IS NULL`;

/** Whether any row is live: what a scan's start needs, without counting a million rows. */
export const hasLive = (def: TableDef) =>
  sql`SELECT EXISTS (SELECT 1 FROM ${raw(tableText(def).t)} WHERE _removed_at IS NULL) AS live`;

const unseenWhere = (def: TableDef) => {
  const { t, k, unseen } = tableText(def);
  return sql`${raw(unseen)}${def.table} AND s.record_id = ${raw(t)}.${raw(k)})`;
};

/** Live rows the current scan has not seen. */
export const unseenCount = (def: TableDef) =>
  sql`SELECT count(*) AS n FROM ${liveRowsOf(def)} WHERE ${unseenWhere(def)}`;

/** Marks every live row the scan has not seen as removed, returning their keys. */
export const tombstoneUnseen = (def: TableDef, at: string) => {
  const { k } = tableText(def);
  return sql`UPDATE ${liveRowsOf(def)} SET _removed_at = ${at} WHERE ${unseenWhere(def)} RETURNING ${raw(k)} AS key`;
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

const POSITIONS = new RowsShape('(', 2, ')');
const SEEN = new InsertRows(
  'INSERT INTO sync_seen (resource, record_id)',
  ['text', 'text'],
  ' ON CONFLICT DO NOTHING',
);
const QUARANTINE = new InsertRows(
  'INSERT INTO quarantine (resource, record_id, run_id, reason, raw, at, position)',
  ['text', 'text', 'int8', 'text', 'text', 'timestamptz', 'int8'],
);
const CUSTODY_IDS = new InsertRows(
  'INSERT INTO custody_ids (kind, id, source, added_at)',
  ['text', 'text', 'text', 'timestamptz'],
  ' ON CONFLICT DO NOTHING',
);

/** Records keys as seen by the scan (a key seen before stays as it is). */
export const addSeen = (table: string, keys: readonly string[], source?: RowsSource) =>
  SEEN.of(
    keys.flatMap((key) => [table, key]),
    source,
  );

export const clearSeen = (table: string) => sql`DELETE FROM sync_seen WHERE resource = ${table}`;

/** Quarantine rows of one run at `at`. */
export const addQuarantine = (
  table: string,
  runId: number,
  at: string,
  rows: readonly { key: string | null; reason: string; raw: string; position?: number | null }[],
  source?: RowsSource,
) =>
  QUARANTINE.of(
    rows.flatMap((r) => [table, r.key, runId, r.reason, r.raw, at, r.position ?? null]),
    source,
  );

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
export const addCustodyIds = (
  at: string,
  adds: readonly { kind: string; id: string; source: string }[],
  source?: RowsSource,
) =>
  CUSTODY_IDS.of(
    adds.flatMap((a) => [a.kind, a.id, a.source, at]),
    source,
  );

/** Ids of `kind` still in custody, with when they were added (the caller orders them). */
export const activeCustodyIds = (kind: string) =>
  sql`SELECT id, added_at FROM custody_ids WHERE kind = ${kind} AND ended_at IS NULL`;

/** An id left custody (once). */
export const endCustodyId = (kind: string, id: string, at: string) =>
  sql`UPDATE custody_ids SET ended_at = ${at} WHERE kind = ${kind} AND id = ${id} AND ended_at IS NULL`;
