import { recordChanges } from '../db/changes.js';
import type { Sqlite } from '../db/open.js';
import { perHandle } from '../db/perHandle.js';
import { tokenizationBodies } from '../operations/reads.js';
import { type Checkpoint, readCheckpointState } from './scan/checkpoint.js';

/**
 * The SQL of the sync bookkeeping (runs, checkpoints, seen keys, changes, quarantine, custody ids),
 * prepared once per database handle and reused on the hot path. The mirror tables' own statements
 * are in mirrorTable.ts. Vocabulary: `resource` is the sync target's name (`units`, as in
 * `sync_runs` and `sync_checkpoints`); `table` is the mirror table (`unit_operations`, as in
 * `changes`, `sync_seen` and `quarantine`).
 */

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

/** The `sync_runs` count columns, set from a RunCounts object by name. */
const COUNT_COLUMNS = Object.keys(emptyCounts())
  .map((c) => `${c} = @${c}`)
  .join(', ');

export function emptyCounts(): RunCounts {
  return { fetched: 0, inserted: 0, updated: 0, removed: 0, unchanged: 0, quarantined: 0, pages: 0 };
}

/** What the writes of one batch did, by outcome (a part of RunCounts). */
export type WriteTally = Pick<RunCounts, 'inserted' | 'updated' | 'unchanged' | 'quarantined' | 'removed'>;

/** `counts` plus `tally` (pure). */
export function withTally(counts: RunCounts, tally: Partial<WriteTally>): RunCounts {
  return {
    ...counts,
    inserted: counts.inserted + (tally.inserted ?? 0),
    updated: counts.updated + (tally.updated ?? 0),
    unchanged: counts.unchanged + (tally.unchanged ?? 0),
    quarantined: counts.quarantined + (tally.quarantined ?? 0),
    removed: counts.removed + (tally.removed ?? 0),
  };
}

/** A `sync_runs` row still marked running. */
export interface RunningRow {
  id: number;
  resource: string;
  pid: number | null;
}

/** Prepared statements of the sync bookkeeping tables (runs, checkpoints, seen, changes, quarantine, custody ids). */
export class Bookkeeping {
  private readonly s;

  constructor(readonly sqlite: Sqlite) {
    const p = sqlite.prepare.bind(sqlite);
    this.s = {
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
      progress: p<[RunCounts & { runId: number }]>(`UPDATE sync_runs SET ${COUNT_COLUMNS} WHERE id = @runId`),
      finishRun: p<[RunCounts & { runId: number; at: string; status: string; error: string | null }]>(
        `UPDATE sync_runs SET finished_at = @at, status = @status, error = @error, ${COUNT_COLUMNS} WHERE id = @runId`,
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
    };
  }

  /** A `changes` row; its `resource` column holds the table name (the feed's documented values). */
  addChange(table: string, key: string, kind: 'insert' | 'update' | 'remove', at: string): void {
    recordChanges(this.sqlite, [{ resource: table, recordId: key, kind, at }]);
  }

  /** Records a key as seen by the scan; false when it was already seen (a duplicate from drift). */
  markSeen(table: string, key: string): boolean {
    return this.s.seen.run(table, key).changes > 0;
  }

  clearSeen(table: string): void {
    this.s.clearSeen.run(table);
  }

  checkpoint(resource: string): Checkpoint | undefined {
    const row = this.s.getCheckpoint.get(resource);
    if (!row) return undefined;
    return {
      resource: row.resource,
      runId: row.run_id,
      mode: row.mode === 'incremental' ? 'incremental' : 'full',
      nextOffset: row.next_offset,
      scanStartedAt: row.scan_started_at,
      state: readCheckpointState(row.state),
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
    this.s.progress.run({ ...c, runId });
  }

  finishRun(runId: number, at: string, status: string, error: string | null, c: RunCounts): void {
    this.s.finishRun.run({ ...c, runId, at, status, error });
  }

  runningRuns(): RunningRow[] {
    return this.s.running.all();
  }

  interruptRun(runId: number, at: string, reason: string): boolean {
    return this.s.interrupt.run(at, reason, runId).changes > 0;
  }

  quarantine(
    table: string,
    key: string | null,
    runId: number,
    reason: string,
    raw: string,
    at: string,
  ): void {
    this.s.quarantine.run(table, key, runId, reason, raw, at);
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
    return tokenizationBodies(this.sqlite, wireSpelling);
  }
}

/** The bookkeeping statements of a database handle, prepared on first use. */
export const bookkeeping: (sqlite: Sqlite) => Bookkeeping = perHandle((sqlite) => new Bookkeeping(sqlite));
