/**
 * The scan cursor: a list scan's whole state and every decision taken from it, with no I/O. Where
 * a run starts (from its checkpoint), the next page request, whether a record is overlap to verify,
 * already held or new, what follows a page, the checkpoints to commit, and whether the finished
 * scan may tombstone. The driver does the I/O around it; the functions here mutate only the cursor.
 */

import type { ResourceName } from '../../operator/fields.js';
import { normalizeRecord, recordKey } from '../../operator/schemas.js';
import { OverlapMismatch } from '../syncErrors.js';
import { type FetchedRecord, identify } from '../writeDecision.js';
import {
  batchCheckpoint,
  type Checkpoint,
  idleCheckpoint,
  logCheckpoint,
  type ScanProgress,
} from './checkpoint.js';
import { afterPage, effectivePageSize, type PageRequest, type PageShape, provenCap } from './pager.js';

/** Where an incremental units run starts, and which positions it must find unchanged. */
export interface LogWindow {
  /** First offset requested. */
  start: number;
  /** Positions [start, known) are the overlap, checked against the mirror. */
  known: number;
}

/** The window of an incremental run over a log whose first `known` positions the mirror holds. */
export function logWindow(known: number, overlap: number): LogWindow {
  return { start: Math.max(0, known - overlap), known };
}

/** How one run of a list resource will go, decided from its checkpoint before it starts. */
export interface ScanPlan {
  mode: 'full' | 'incremental';
  /** Offset of the first request. */
  startOffset: number;
  /** The run whose unfinished scan this one continues (null: a fresh start). */
  resumedFrom: number | null;
  /** When the scan being continued started (null: now). */
  scanStartedAt: string | null;
  /** Whether the continued scan records seen keys (null: decide at start, from the table). */
  trackSeen: boolean | null;
  /** Incremental runs: the log window to verify and extend. */
  window: LogWindow | null;
  /** Key of the record just before `startOffset`, expected again at the start of the next page. */
  anchor: string | null;
  /** The continued scan already saw drift. */
  drifted: boolean;
  /** The operator's cap on `limit` learned by earlier scans (null: none). */
  pageSize: number | null;
}

/** A fresh full scan from offset 0, paging with the learned page size if any. */
export function freshFullScan(pageSize: number | null): ScanPlan {
  return {
    mode: 'full',
    startOffset: 0,
    resumedFrom: null,
    scanStartedAt: null,
    trackSeen: null,
    window: null,
    anchor: null,
    drifted: false,
    pageSize,
  };
}

/**
 * Where a run starts: an unfinished scan is resumed (even with `full`, since it is one); a log whose
 * length is known goes on incrementally unless `full`; anything else scans afresh.
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
      ...freshFullScan(pageSize),
      mode: 'incremental',
      startOffset: window.start,
      trackSeen: false,
      window,
    };
  }
  return freshFullScan(pageSize);
}

/** The list a cursor scans. */
export interface ScanTarget {
  /** The resource (`units`): the checkpoint's name. */
  readonly name: string;
  /** The mirror table (`unit_operations`). */
  readonly table: ResourceName;
  readonly key: string;
  /** Synced as a log (incremental between scans). */
  readonly log: boolean;
}

/** What the mirror says when a scan starts (read by the store). */
export interface StartFacts {
  /** ISO time now. */
  now: string;
  /** The table has a live row (a scan of an empty table needs no seen set). */
  hasLive: boolean;
  /** Incremental: the mirror's rows of the overlap window. */
  overlapRows: readonly { key: string; hash: string; position: number }[];
  /** Incremental: key of the mirror's log position 0. */
  logStartKey: string | null;
}

/** A scan in progress: its plan, where it stands, and what it has learned. */
export interface ScanCursor extends ScanProgress {
  readonly target: ScanTarget;
  readonly mode: 'full' | 'incremental';
  readonly resumedFrom: number | null;
  readonly window: LogWindow | null;
  /** Incremental: the mirror's overlap rows by position. */
  readonly overlap: ReadonlyMap<number, { key: string; hash: string }>;
  readonly logStartKey: string | null;
  /** The page size the scan started with, to tell whether it learned one. */
  readonly pageSizeAtStart: number | null;
  /** Offset of the next request (before stepping back to the anchor). */
  offset: number;
  /** The next request re-reads the record before `offset` (false only after a page of only the anchor). */
  anchored: boolean;
  previous: PageShape | undefined;
  pages: number;
  /** The longest body of this scan. */
  servedMost: number;
  lastKey: string | null;
  drifted: boolean;
  /** Why the scan may not have seen every record although it ended (null: it saw them all). */
  incomplete: string | null;
  pageSize: number | null;
  logLength: number;
  /** Incremental: overlap positions found matching. */
  readonly verified: Set<number>;
}

/** A cursor at the start of `plan`. Whether seen keys are tracked, when the plan leaves it open, is `hasLive`. */
export function startCursor(target: ScanTarget, plan: ScanPlan, facts: StartFacts): ScanCursor {
  const overlap = new Map<number, { key: string; hash: string }>();
  for (const row of facts.overlapRows) overlap.set(row.position, row);
  return {
    target,
    mode: plan.mode,
    resumedFrom: plan.resumedFrom,
    scanStartedAt: plan.scanStartedAt ?? facts.now,
    trackSeen: plan.trackSeen ?? facts.hasLive,
    window: plan.window,
    overlap,
    logStartKey: plan.window ? facts.logStartKey : null,
    pageSizeAtStart: plan.pageSize,
    offset: plan.startOffset,
    anchored: true,
    previous: undefined,
    pages: 0,
    servedMost: 0,
    lastKey: plan.anchor,
    drifted: plan.drifted,
    incomplete: null,
    pageSize: plan.pageSize,
    logLength: plan.window?.known ?? 0,
    verified: new Set(),
  };
}

/**
 * The next page request: `limit` is the configured page size or the learned cap, whichever is
 * smaller; each later page of a full scan starts one record early, so finding the previous page's
 * last record there proves nothing moved under the offsets.
 */
export function nextRequest(cursor: ScanCursor, configuredPageSize: number): PageRequest {
  const limit = effectivePageSize(configuredPageSize, cursor.pageSize);
  const anchor = cursor.offset > 0 && !cursor.window && cursor.anchored ? cursor.lastKey : null;
  return {
    offset: anchor === null ? cursor.offset : cursor.offset - 1,
    limit,
    anchor,
    previous: cursor.previous,
    logStartKey: cursor.logStartKey,
  };
}

/**
 * Takes a page whose anchor was not its first record. A units log whose records moved is no longer
 * the log the mirror holds: the run falls back to a full scan (throws). A list scan goes on but
 * must not tombstone; true the first time, so it is logged once.
 */
export function markDrift(cursor: ScanCursor): boolean {
  if (cursor.window) throw new OverlapMismatch(`records moved in the log near offset ${cursor.offset}`);
  const first = !cursor.drifted;
  cursor.drifted = true;
  return first;
}

/**
 * Where a record at `position` stands in an incremental run: `verify` (in the overlap: must match
 * the mirror), `held` (before the overlap, or already written by this run: skipped) or `new`.
 * A full scan writes everything.
 */
export function placeRecord(cursor: ScanCursor, position: number): 'verify' | 'held' | 'new' {
  const { window } = cursor;
  if (!window) return 'new';
  if (position < window.known) return position >= window.start ? 'verify' : 'held';
  // A whole-log body read again after earlier pages of this run: those positions are written.
  return position < cursor.logLength ? 'held' : 'new';
}

/**
 * Routes a batch: overlap records are checked against the mirror, held ones dropped, new ones
 * returned to write (with the log extended over them). Null when an incremental batch has nothing
 * to write, so no transaction is needed. Throws OverlapMismatch when the overlap does not match.
 */
export function admitBatch(cursor: ScanCursor, records: readonly FetchedRecord[]): FetchedRecord[] | null {
  const { target } = cursor;
  if (records.length > 0) cursor.lastKey = recordKey(records[records.length - 1]!.value, target.key);
  if (!cursor.window) return records as FetchedRecord[];
  const fresh: FetchedRecord[] = [];
  for (const record of records) {
    const position = record.position ?? 0;
    const place = placeRecord(cursor, position);
    if (place === 'verify') verifyOverlap(cursor, position, record.value);
    if (place !== 'new') continue;
    requireCompleteOverlap(cursor);
    cursor.logLength = position + 1;
    fresh.push(record);
  }
  return fresh.length === 0 ? null : fresh;
}

/** Checks one record of the overlap against the mirror row at its position (throws on a mismatch). */
function verifyOverlap(cursor: ScanCursor, position: number, value: unknown): void {
  const stored = cursor.overlap.get(position);
  const { key, hash } = identify(value, cursor.target.key);
  // A position the mirror has no row for matches only if it holds a record that is quarantined again.
  const matches = stored
    ? stored.key === key && stored.hash === hash
    : !normalizeRecord(cursor.target.table, value).ok;
  if (!matches)
    throw new OverlapMismatch(`position ${position}: expected ${stored?.key ?? 'no record'}, got ${key}`);
  cursor.verified.add(position);
}

/** Throws unless every position of the overlap was read and matched. */
export function requireCompleteOverlap(cursor: ScanCursor): void {
  const { window } = cursor;
  if (!window) return;
  const expected = window.known - window.start;
  if (cursor.verified.size !== expected) {
    throw new OverlapMismatch(`found ${cursor.verified.size} of the ${expected} overlap positions`);
  }
}

/** The checkpoint to commit with a batch that ends at `nextOffset`. */
export function checkpointAt(cursor: ScanCursor, runId: number, nextOffset: number): Checkpoint {
  return batchCheckpoint(cursor.target.name, runId, cursor, nextOffset);
}

/** What follows a page. */
export type PageEnd =
  | { next: 'page' }
  | { next: 'done'; why: 'empty' | 'unpaginated' | 'same-page' }
  | { next: 'max-pages' };

/** A page's end, and the cap it proved when it proved one below the `limit` asked (log it once). */
export interface PageEnding {
  end: PageEnd;
  capped: { requested: number; pageSize: number } | null;
}

/**
 * What follows a page that was read and written (`same-page`: the list served the page before
 * again, so it ignores offset; if that page was as long as the limit, the list may hold more).
 */
export function endPage(cursor: ScanCursor, page: PageShape | 'same-page', maxPages: number): PageEnding {
  cursor.pages++;
  if (page === 'same-page') {
    const previous = cursor.previous;
    if (cursor.mode === 'full') cursor.logLength = cursor.offset;
    if (previous && previous.count >= previous.limit)
      cursor.incomplete = `the list ignores offset and answered only ${previous.count} records`;
    return { end: { next: 'done', why: 'same-page' }, capped: null };
  }
  const cap = provenCap(cursor.previous, page);
  const capped = cap !== null && cap < page.limit ? { requested: page.limit, pageSize: cap } : null;
  if (capped) cursor.pageSize = capped.pageSize;
  cursor.servedMost = Math.max(cursor.servedMost, page.count);
  const decision = afterPage(page, cursor.pages, maxPages, cursor.servedMost);
  if (decision.action === 'done') {
    if (cursor.mode === 'full')
      cursor.logLength = page.whole ? page.count : Math.max(cursor.offset, page.offset + page.count);
    return { end: { next: 'done', why: decision.reason }, capped };
  }
  if (decision.action === 'stop') return { end: { next: 'max-pages' }, capped };
  cursor.offset = decision.offset;
  cursor.anchored = decision.anchored;
  cursor.previous = page;
  return { end: { next: 'page' }, capped };
}

/**
 * The request that will follow a page, known once the page is read and before it is written, so
 * the driver can send it while the page commits. Pure: the cursor is not changed (endPage runs on a
 * copy, as the written page will leave it). Null when the page ends the scan, is the whole list or
 * the same page again. The driver checks the prediction against {@link nextRequest} after the write.
 */
export function requestAfter(
  cursor: ScanCursor,
  page: PageShape,
  configuredPageSize: number,
  maxPages: number,
): PageRequest | null {
  if (page.whole) return null;
  // What admitBatch leaves: the key of the page's last record, when one follows the anchor.
  const ahead: ScanCursor = { ...cursor, lastKey: page.count > page.skipped ? page.lastKey : cursor.lastKey };
  return endPage(ahead, page, maxPages).end.next === 'page' ? nextRequest(ahead, configuredPageSize) : null;
}

/**
 * What a finished incremental run commits: the log checkpoint, only when the run learned a page
 * size (its batches committed the rest). Throws when the overlap was not all read.
 */
export function closeIncremental(cursor: ScanCursor, runId: number): Checkpoint | null {
  requireCompleteOverlap(cursor);
  return cursor.pageSize !== cursor.pageSizeAtStart ? logCheckpoint(cursor.target.name, runId, cursor) : null;
}

/** Whether a finished full scan may tombstone: not without a seen set; not after drift or an incomplete read. */
export type TombstoneVerdict =
  | { kind: 'no-seen-set' }
  | { kind: 'skip'; reason: string }
  | { kind: 'guarded' };

export function tombstoneVerdict(cursor: ScanCursor): TombstoneVerdict {
  if (!cursor.trackSeen) return { kind: 'no-seen-set' };
  if (cursor.drifted || cursor.incomplete !== null)
    return { kind: 'skip', reason: cursor.incomplete ?? 'records moved during the scan' };
  return { kind: 'guarded' };
}

/**
 * The refusal when removing `unseen` of `live` rows exceeds `share` (an upstream that suddenly
 * answers an empty list must not wipe the mirror), else null.
 */
export function removalRefusal(name: string, unseen: number, live: number, share: number): string | null {
  if (unseen === 0 || unseen <= share * live) return null;
  return (
    `refused to mark ${unseen} of ${live} ${name} removed (more than sync.max_remove_share=${share}); ` +
    'the mirror keeps them'
  );
}

/** The checkpoint a finished full scan leaves for the next run (null: none). */
export function closeFull(cursor: ScanCursor, runId: number): Checkpoint | null {
  return idleCheckpoint(cursor.target.name, cursor.target.log, runId, cursor);
}
