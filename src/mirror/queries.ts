import type { Sqlite } from '../db/open.js';
import type { StoredState } from './decide.js';
import type { TableDef } from './resources.js';

/**
 * All SQL of the mirror, prepared once per database and table and reused on the hot path.
 * Identifiers come from the field lists in operator/fields.ts, never from input.
 */

const q = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** A row value as it goes into a prepared statement. */
type Value = string | number | null;

/** Prepared statements of one mirror table. */
export class TableQueries {
  private readonly getStmt;
  private readonly insertStmt;
  private readonly updateStmt;
  private readonly positionStmt;
  private readonly liveCountStmt;
  private readonly hasLiveStmt;
  private readonly unseenCountStmt;
  private readonly tombstoneStmt;
  private readonly overlapStmt;
  private readonly endCustodyStmt;

  constructor(
    sqlite: Sqlite,
    readonly def: TableDef,
  ) {
    const t = q(def.table);
    const k = q(def.key);
    const cols = def.fields.map((f) => q(f.name));
    const extraCols = def.positioned ? [q('_position')] : [];
    this.getStmt = sqlite.prepare<[string], StoredState>(
      `SELECT _hash AS hash, _removed_at AS removedAt, ${def.positioned ? '_position' : 'NULL'} AS position,
        ${def.custody ? '_custody_ended_at' : 'NULL'} AS custodyEndedAt FROM ${t} WHERE ${k} = ?`,
    );
    const insertCols = [...cols, '_raw', '_hash', '_first_seen_at', '_last_seen_at', ...extraCols];
    this.insertStmt = sqlite.prepare<Value[]>(
      `INSERT INTO ${t} (${insertCols.join(', ')}) VALUES (${insertCols.map(() => '?').join(', ')})`,
    );
    const sets = [
      ...cols.filter((c) => c !== k).map((c) => `${c} = ?`),
      '_raw = ?',
      '_hash = ?',
      '_last_seen_at = ?',
      '_removed_at = NULL',
      ...(def.custody ? ['_custody_ended_at = NULL'] : []),
      ...extraCols.map((c) => `${c} = ?`),
    ];
    this.updateStmt = sqlite.prepare<Value[]>(`UPDATE ${t} SET ${sets.join(', ')} WHERE ${k} = ?`);
    this.positionStmt = def.positioned
      ? sqlite.prepare<[number, string]>(`UPDATE ${t} SET _position = ? WHERE ${k} = ?`)
      : undefined;
    this.liveCountStmt = sqlite.prepare<[], { n: number }>(
      `SELECT count(*) AS n FROM ${t} WHERE _removed_at IS NULL`,
    );
    this.hasLiveStmt = sqlite.prepare<[], { n: number }>(
      `SELECT EXISTS (SELECT 1 FROM ${t} WHERE _removed_at IS NULL) AS n`,
    );
    const unseen = `_removed_at IS NULL AND ${k} NOT IN (SELECT record_id FROM sync_seen WHERE resource = ?)`;
    this.unseenCountStmt = sqlite.prepare<[string], { n: number }>(
      `SELECT count(*) AS n FROM ${t} WHERE ${unseen}`,
    );
    this.tombstoneStmt = sqlite.prepare<[string, string], { key: string }>(
      `UPDATE ${t} SET _removed_at = ? WHERE ${unseen} RETURNING ${k} AS key`,
    );
    this.overlapStmt = def.positioned
      ? sqlite.prepare<[number, number], { key: string; hash: string; position: number }>(
          `SELECT ${k} AS key, _hash AS hash, _position AS position FROM ${t}
           WHERE _removed_at IS NULL AND _position >= ? AND _position < ?`,
        )
      : undefined;
    this.endCustodyStmt = def.custody
      ? sqlite.prepare<[string, string]>(
          `UPDATE ${t} SET _custody_ended_at = ? WHERE ${k} = ? AND _custody_ended_at IS NULL`,
        )
      : undefined;
  }

  get(key: string): StoredState | undefined {
    return this.getStmt.get(key);
  }

  /** `values` in field order (key first, as the field lists have it). */
  insert(values: readonly Value[], raw: string, hash: string, at: string, position: number | null): void {
    const params: Value[] = [...values, raw, hash, at, at];
    if (this.def.positioned) params.push(position);
    this.insertStmt.run(...params);
  }

  update(
    key: string,
    values: readonly Value[],
    raw: string,
    hash: string,
    at: string,
    position: number | null,
  ): void {
    const params: Value[] = [];
    for (let i = 0; i < values.length; i++)
      if (this.def.fields[i]!.name !== this.def.key) params.push(values[i]!);
    params.push(raw, hash, at);
    if (this.def.positioned) params.push(position);
    params.push(key);
    this.updateStmt.run(...params);
  }

  setPosition(key: string, position: number): void {
    this.positionStmt?.run(position, key);
  }

  liveCount(): number {
    return this.liveCountStmt.get()!.n;
  }

  /** Whether any row is live: what a scan's start needs, without counting a million rows. */
  hasLive(): boolean {
    return this.hasLiveStmt.get()!.n === 1;
  }

  /** Live rows the current scan has not seen. */
  unseenCount(): number {
    return this.unseenCountStmt.get(this.def.table)!.n;
  }

  /** Marks every live row the scan has not seen as removed; returns their keys. */
  tombstoneUnseen(at: string): string[] {
    return this.tombstoneStmt.all(at, this.def.table).map((r) => r.key);
  }

  /** Live rows of the units log at positions [from, to). */
  overlapRows(from: number, to: number): { key: string; hash: string; position: number }[] {
    return this.overlapStmt ? this.overlapStmt.all(from, to) : [];
  }

  /** Marks a custody row as out of custody; true when the row existed and was in custody. */
  endCustody(key: string, at: string): boolean {
    return (this.endCustodyStmt?.run(at, key).changes ?? 0) > 0;
  }
}

/** A sync checkpoint row, its `state` parsed. */
export interface Checkpoint {
  resource: string;
  runId: number;
  mode: 'full' | 'incremental';
  nextOffset: number;
  scanStartedAt: string;
  state: CheckpointState;
}

/** What a checkpoint carries besides the offset. */
export interface CheckpointState {
  /** A scan is in progress (resume it from `nextOffset`). */
  inScan: boolean;
  /** The scan records seen keys in `sync_seen` (off when the table was empty at its start). */
  trackSeen: boolean;
  /** Units: how many log positions the mirror holds, [0, logLength) (default: none yet). */
  logLength?: number;
  /** Key of the last record written, re-read as the first of the next page to detect drift (default: none). */
  lastKey?: string | null;
  /** The scan saw records move under its offsets: it must not tombstone (default: false). */
  drifted?: boolean;
}

/** Counters of one run, as `sync_runs` stores them. */
export interface RunCounts {
  fetched: number;
  inserted: number;
  updated: number;
  removed: number;
  unchanged: number;
  quarantined: number;
  pages: number;
}

export function emptyCounts(): RunCounts {
  return { fetched: 0, inserted: 0, updated: 0, removed: 0, unchanged: 0, quarantined: 0, pages: 0 };
}

/** A `sync_runs` row still marked running. */
export interface RunningRow {
  id: number;
  resource: string;
  pid: number | null;
}

/** Prepared statements of the sync bookkeeping tables (runs, checkpoints, seen, changes, quarantine, custody ids). */
export class SyncQueries {
  private readonly s;

  constructor(readonly sqlite: Sqlite) {
    const p = sqlite.prepare.bind(sqlite);
    this.s = {
      change: p<[string, string, string, string]>(
        'INSERT INTO changes (resource, record_id, kind, at) VALUES (?, ?, ?, ?)',
      ),
      seen: p<[string, string]>('INSERT OR IGNORE INTO sync_seen (resource, record_id) VALUES (?, ?)'),
      clearSeen: p<[string]>('DELETE FROM sync_seen WHERE resource = ?'),
      getCheckpoint: p<
        [string],
        {
          resource: string;
          run_id: number;
          mode: string;
          next_offset: number;
          scan_started_at: string;
          state: string | null;
        }
      >('SELECT * FROM sync_checkpoints WHERE resource = ?'),
      putCheckpoint: p<[string, number, string, number, string, string, string]>(
        `INSERT INTO sync_checkpoints (resource, run_id, mode, next_offset, scan_started_at, state, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(resource) DO UPDATE SET run_id = excluded.run_id, mode = excluded.mode,
           next_offset = excluded.next_offset, scan_started_at = excluded.scan_started_at,
           state = excluded.state, updated_at = excluded.updated_at`,
      ),
      deleteCheckpoint: p<[string]>('DELETE FROM sync_checkpoints WHERE resource = ?'),
      startRun: p<[string, string, string, string, number | null, number]>(
        `INSERT INTO sync_runs (resource, mode, trigger, started_at, status, resumed_from, pid)
         VALUES (?, ?, ?, ?, 'running', ?, ?)`,
      ),
      setMode: p<[string, number]>('UPDATE sync_runs SET mode = ? WHERE id = ?'),
      progress: p<[number, number, number, number, number, number, number, number]>(
        `UPDATE sync_runs SET fetched = ?, inserted = ?, updated = ?, removed = ?, unchanged = ?, quarantined = ?,
           pages = ? WHERE id = ?`,
      ),
      finishRun: p<
        [string, string, string | null, number, number, number, number, number, number, number, number]
      >(
        `UPDATE sync_runs SET finished_at = ?, status = ?, error = ?, fetched = ?, inserted = ?, updated = ?,
           removed = ?, unchanged = ?, quarantined = ?, pages = ? WHERE id = ?`,
      ),
      running: p<[], RunningRow>("SELECT id, resource, pid FROM sync_runs WHERE status = 'running'"),
      interrupt: p<[string, string, number]>(
        "UPDATE sync_runs SET status = 'interrupted', finished_at = ?, error = ? WHERE id = ? AND status = 'running'",
      ),
      quarantine: p<[string, string | null, number, string, string, string]>(
        'INSERT INTO quarantine (resource, record_id, run_id, reason, raw, at) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      addCustodyId: p<[string, string, string, string]>(
        'INSERT OR IGNORE INTO custody_ids (kind, id, source, added_at) VALUES (?, ?, ?, ?)',
      ),
      custodyIds: p<[string], { id: string }>(
        'SELECT id FROM custody_ids WHERE kind = ? AND ended_at IS NULL ORDER BY added_at, id',
      ),
      endCustodyId: p<[string, string, string]>(
        'UPDATE custody_ids SET ended_at = ? WHERE kind = ? AND id = ? AND ended_at IS NULL',
      ),
      tokenizations: p<[string], { body: string }>(
        `SELECT body FROM outbox WHERE lower(operationType) IN (lower(?), 'tokenization')
           AND state IN ('accepted', 'approved')`,
      ),
    };
  }

  addChange(resource: string, key: string, kind: 'insert' | 'update' | 'remove', at: string): void {
    this.s.change.run(resource, key, kind, at);
  }

  /** Records a key as seen by the scan; false when it was already seen (a duplicate from drift). */
  markSeen(resource: string, key: string): boolean {
    return this.s.seen.run(resource, key).changes > 0;
  }

  clearSeen(resource: string): void {
    this.s.clearSeen.run(resource);
  }

  checkpoint(resource: string): Checkpoint | undefined {
    const row = this.s.getCheckpoint.get(resource);
    if (!row) return undefined;
    let state: CheckpointState = { inScan: false, trackSeen: true };
    try {
      state = { ...state, ...(JSON.parse(row.state ?? '{}') as Partial<CheckpointState>) };
    } catch {
      // An unreadable state is treated as no scan in progress: the next run starts afresh.
    }
    return {
      resource: row.resource,
      runId: row.run_id,
      mode: row.mode === 'incremental' ? 'incremental' : 'full',
      nextOffset: row.next_offset,
      scanStartedAt: row.scan_started_at,
      state,
    };
  }

  putCheckpoint(cp: Checkpoint, at: string): void {
    this.s.putCheckpoint.run(
      cp.resource,
      cp.runId,
      cp.mode,
      cp.nextOffset,
      cp.scanStartedAt,
      JSON.stringify(cp.state),
      at,
    );
  }

  deleteCheckpoint(resource: string): void {
    this.s.deleteCheckpoint.run(resource);
  }

  startRun(resource: string, mode: string, trigger: string, at: string, resumedFrom: number | null): number {
    return Number(this.s.startRun.run(resource, mode, trigger, at, resumedFrom, process.pid).lastInsertRowid);
  }

  setRunMode(runId: number, mode: string): void {
    this.s.setMode.run(mode, runId);
  }

  progress(runId: number, c: RunCounts): void {
    this.s.progress.run(
      c.fetched,
      c.inserted,
      c.updated,
      c.removed,
      c.unchanged,
      c.quarantined,
      c.pages,
      runId,
    );
  }

  finishRun(runId: number, at: string, status: string, error: string | null, c: RunCounts): void {
    this.s.finishRun.run(
      at,
      status,
      error,
      c.fetched,
      c.inserted,
      c.updated,
      c.removed,
      c.unchanged,
      c.quarantined,
      c.pages,
      runId,
    );
  }

  runningRuns(): RunningRow[] {
    return this.s.running.all();
  }

  interruptRun(runId: number, at: string, reason: string): boolean {
    return this.s.interrupt.run(at, reason, runId).changes > 0;
  }

  quarantine(
    resource: string,
    key: string | null,
    runId: number,
    reason: string,
    raw: string,
    at: string,
  ): void {
    this.s.quarantine.run(resource, key, runId, reason, raw, at);
  }

  addCustodyId(kind: string, id: string, source: string, at: string): void {
    this.s.addCustodyId.run(kind, id, source, at);
  }

  custodyIds(kind: string): string[] {
    return this.s.custodyIds.all(kind).map((r) => r.id);
  }

  endCustodyId(kind: string, id: string, at: string): void {
    this.s.endCustodyId.run(at, kind, id);
  }

  /** Bodies of this marketplace's accepted or approved Tokenizations. */
  tokenizationBodies(wireSpelling: string): string[] {
    return this.s.tokenizations.all(wireSpelling).map((r) => r.body);
  }
}

/** Statements are prepared once per database handle and table. */
const tableCache = new WeakMap<Sqlite, Map<string, TableQueries>>();
const syncCache = new WeakMap<Sqlite, SyncQueries>();

export function tableQueries(sqlite: Sqlite, def: TableDef): TableQueries {
  let byTable = tableCache.get(sqlite);
  if (!byTable) {
    byTable = new Map();
    tableCache.set(sqlite, byTable);
  }
  let queries = byTable.get(def.table);
  if (!queries) {
    queries = new TableQueries(sqlite, def);
    byTable.set(def.table, queries);
  }
  return queries;
}

export function syncQueries(sqlite: Sqlite): SyncQueries {
  let queries = syncCache.get(sqlite);
  if (!queries) {
    queries = new SyncQueries(sqlite);
    syncCache.set(sqlite, queries);
  }
  return queries;
}
