/**
 * The checkpoint of a list resource, its one home: its shape, how it is read from its stored text,
 * and the three forms a scan writes (with each batch, between scans, for a units log). Pure.
 * (`src/health/snapshot.ts` reads `$.pageSize` from the stored JSON directly, in SQL.)
 */

/** A sync checkpoint row, its `state` parsed. */
export interface Checkpoint {
  /** The resource (`projects`, `issuances`, `units`). */
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
  /** The operator's silent cap on `limit`, learned by paging; kept across runs (default: none). */
  pageSize?: number | null;
}

/** The stored `state` text read back; an unreadable one counts as no scan in progress (pure). */
export function readCheckpointState(text: string | null): CheckpointState {
  const state: CheckpointState = { inScan: false, trackSeen: true };
  try {
    return { ...state, ...(JSON.parse(text ?? '{}') as Partial<CheckpointState>) };
  } catch {
    // The next run starts afresh.
    return state;
  }
}

/** What of a scan its checkpoints keep (the scan cursor has all of it). */
export interface ScanProgress {
  readonly mode: 'full' | 'incremental';
  readonly scanStartedAt: string;
  readonly trackSeen: boolean;
  readonly lastKey: string | null;
  readonly drifted: boolean;
  readonly pageSize: number | null;
  /** Units: positions the mirror holds, [0, logLength). */
  readonly logLength: number;
}

/** The checkpoint of a units log between scans: the next run reads on from `logLength`. */
export function logCheckpoint(resource: string, runId: number, scan: ScanProgress): Checkpoint {
  return {
    resource,
    runId,
    mode: 'incremental',
    nextOffset: scan.logLength,
    scanStartedAt: scan.scanStartedAt,
    state: { inScan: false, trackSeen: false, logLength: scan.logLength, ...learned(scan) },
  };
}

/**
 * The checkpoint of a list between scans, or null when there is nothing to keep: the next run scans
 * afresh, and only a learned page size carries over.
 */
export function idleCheckpoint(
  resource: string,
  isLog: boolean,
  runId: number,
  scan: ScanProgress,
): Checkpoint | null {
  if (isLog) return logCheckpoint(resource, runId, scan);
  if (scan.pageSize === null) return null;
  return {
    resource,
    runId,
    mode: 'full',
    nextOffset: 0,
    scanStartedAt: scan.scanStartedAt,
    state: { inScan: false, trackSeen: false, ...learned(scan) },
  };
}

/** The checkpoint written with each batch: where the scan resumes if it is cut short. */
export function batchCheckpoint(
  resource: string,
  runId: number,
  scan: ScanProgress,
  nextOffset: number,
): Checkpoint {
  if (scan.mode === 'incremental') return logCheckpoint(resource, runId, scan);
  return {
    resource,
    runId,
    mode: 'full',
    nextOffset,
    scanStartedAt: scan.scanStartedAt,
    state: {
      inScan: true,
      trackSeen: scan.trackSeen,
      lastKey: scan.lastKey,
      drifted: scan.drifted,
      ...learned(scan),
    },
  };
}

/** The learned page size, only when there is one (older checkpoints stay as they were). */
function learned(scan: ScanProgress): { pageSize?: number } {
  return scan.pageSize === null ? {} : { pageSize: scan.pageSize };
}
