import { type LogWindow, logWindow } from './pager.js';
import type { Checkpoint } from './queries.js';

/** How one run of a list resource will go, decided from its checkpoint before it starts. */
export interface ScanPlan {
  mode: 'full' | 'incremental';
  /** Offset of the first request. */
  startOffset: number;
  /** The run whose unfinished scan this one continues (null: a fresh start). */
  resumedFrom: number | null;
  /** When the scan being continued started (null: now). */
  scanStartedAt: string | null;
  /** Whether the continued scan records seen keys (null: decide at start). */
  trackSeen: boolean | null;
  /** Incremental runs: the log window to verify and extend. */
  window: LogWindow | null;
  /** Key of the record just before `startOffset`, expected again at the start of the next page (default: none). */
  anchor?: string | null;
  /** The continued scan already saw drift (default: false). */
  drifted?: boolean;
  /** The operator's cap on `limit` learned by earlier scans (default: none). */
  pageSize?: number | null;
}

/** A fresh full scan from offset 0, paging with the learned page size if any. */
export function freshFullScan(pageSize: number | null = null): ScanPlan {
  return {
    mode: 'full',
    startOffset: 0,
    resumedFrom: null,
    scanStartedAt: null,
    trackSeen: null,
    window: null,
    pageSize,
  };
}

/**
 * Decides the next run (pure): an unfinished scan is resumed (even with `full`, since it is one);
 * a log whose length is known goes on incrementally unless `full`; anything else scans afresh.
 */
export function planScan(
  cp: Checkpoint | undefined,
  isLog: boolean,
  full: boolean,
  overlap: number,
): ScanPlan {
  const pageSize = cp?.state.pageSize ?? null;
  if (cp?.state.inScan) {
    return {
      mode: 'full',
      startOffset: cp.nextOffset,
      resumedFrom: cp.runId,
      scanStartedAt: cp.scanStartedAt,
      trackSeen: cp.state.trackSeen,
      window: null,
      anchor: cp.state.lastKey ?? null,
      drifted: cp.state.drifted ?? false,
      pageSize,
    };
  }
  if (isLog && !full && cp?.state.logLength !== undefined) {
    const window = logWindow(cp.state.logLength, overlap);
    return {
      mode: 'incremental',
      startOffset: window.start,
      resumedFrom: null,
      scanStartedAt: null,
      trackSeen: false,
      window,
      pageSize,
    };
  }
  return freshFullScan(pageSize);
}
