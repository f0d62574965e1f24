import type { ScanPlan } from './plan.js';
import type { Checkpoint } from './queries.js';
import type { ListResource } from './resources.js';
import type { RecordWriter } from './writer.js';

/** Everything one scan carries from page to page. */
export interface ScanState {
  plan: ScanPlan;
  scanStartedAt: string;
  trackSeen: boolean;
  writer: RecordWriter;
  /** Units: positions the mirror holds, [0, logLength). */
  logLength: number;
  /** Incremental: mirror rows of the overlap by position, and the positions found matching. */
  overlap: Map<number, { key: string; hash: string }>;
  verified: Set<number>;
  /** Key of the last record handled (the next page's anchor). */
  lastKey: string | null;
  /** Records moved under the offsets during this scan: no tombstones from it. */
  drifted: boolean;
  /** Why the scan may not have seen every record although it ended (null: it saw them all). */
  incomplete: string | null;
  /** The operator's cap on `limit`, learned by this scan or an earlier one (null: none seen). */
  pageSize: number | null;
}

/** The checkpoint of a units log between scans: the next run reads on from `logLength`. */
export function logCheckpoint(resource: ListResource, runId: number, state: ScanState): Checkpoint {
  return {
    resource: resource.target,
    runId,
    mode: 'incremental',
    nextOffset: state.logLength,
    scanStartedAt: state.scanStartedAt,
    state: { inScan: false, trackSeen: false, logLength: state.logLength, ...learned(state) },
  };
}

/**
 * The checkpoint of a list between scans, or null when there is nothing to keep: the next run scans
 * afresh, and only a learned page size carries over.
 */
export function idleCheckpoint(resource: ListResource, runId: number, state: ScanState): Checkpoint | null {
  if (resource.log) return logCheckpoint(resource, runId, state);
  if (state.pageSize === null) return null;
  return {
    resource: resource.target,
    runId,
    mode: 'full',
    nextOffset: 0,
    scanStartedAt: state.scanStartedAt,
    state: { inScan: false, trackSeen: false, ...learned(state) },
  };
}

/** The checkpoint written with each batch: where the scan resumes if it is cut short. */
export function batchCheckpoint(
  resource: ListResource,
  runId: number,
  state: ScanState,
  nextOffset: number,
): Checkpoint {
  if (state.plan.mode === 'incremental') return logCheckpoint(resource, runId, state);
  return {
    resource: resource.target,
    runId,
    mode: 'full',
    nextOffset,
    scanStartedAt: state.scanStartedAt,
    state: {
      inScan: true,
      trackSeen: state.trackSeen,
      lastKey: state.lastKey,
      drifted: state.drifted,
      ...learned(state),
    },
  };
}

/** The learned page size, only when there is one (older checkpoints stay as they were). */
function learned(state: ScanState): { pageSize?: number } {
  return state.pageSize === null ? {} : { pageSize: state.pageSize };
}
