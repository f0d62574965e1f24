/**
 * Paging decisions, pure: where the next page starts, whether the list ignores paging, when to stop,
 * what page size the operator really serves. Offsets drift while the operator changes; the writer
 * de-duplicates by key, and tombstones wait for a complete scan, so the pager only has to not loop
 * forever, not misread an unpaginated list, and not take a short page for the end of a list.
 */

/** What one page looked like, enough to tell the same page served twice and a silent cap. */
export interface PageShape {
  /** Offset requested. */
  offset: number;
  /** `limit` requested. */
  limit: number;
  /** Records in the body, the re-read anchor included. */
  count: number;
  /** 1 when the body began with the previous page's last record (the drift anchor), else 0. */
  skipped: number;
  /** The body is the whole list from position 0 (longer than `limit`, or it began at the log's start). */
  whole: boolean;
  firstKey: string | null;
  lastKey: string | null;
}

/** What the loop does after a page. */
export type PageDecision =
  /** `anchored: false`: the next request starts at `offset` itself, without re-reading a record. */
  | { action: 'next'; offset: number; anchored: boolean }
  | { action: 'done'; reason: 'empty' | 'unpaginated' }
  | { action: 'stop'; reason: 'max-pages' };

/** A page larger than the limit: the list ignored `limit` and this body is all of it. */
export function isUnpaginated(count: number, limit: number): boolean {
  return count > limit;
}

/** The same records again at a later offset: the list ignores `offset`. */
export function isSamePage(previous: PageShape | undefined, page: PageShape): boolean {
  return (
    previous !== undefined &&
    page.offset > previous.offset &&
    page.count > 0 &&
    page.count === previous.count &&
    page.firstKey === previous.firstKey &&
    page.lastKey === previous.lastKey
  );
}

/** Records of a page beyond the re-read anchor: what the scan learned from it. */
export function freshCount(page: PageShape): number {
  return page.count - page.skipped;
}

/**
 * Decides what follows a page that was read and written (the same-page check comes before writing).
 * Only a page with nothing new, or a body that is the whole list, ends a scan: operators cap `limit`
 * silently, so a short page means "ask again where it stopped", at the cost of one empty page per
 * scan. `maxPages` stops a scan whose pages are full; a short page always gets the request that
 * proves the end, so a list that needs exactly `maxPages` pages still completes.
 * `servedMost` is the longest body of this scan so far: a page holding only the re-read anchor ends
 * the scan only once the operator was seen to serve two records at once (a cap of 1 leaves no room
 * after the anchor); until then the next request is made without one.
 */
export function afterPage(
  page: PageShape,
  pagesDone: number,
  maxPages: number,
  servedMost: number,
): PageDecision {
  const next = page.offset + page.count;
  if (freshCount(page) <= 0) {
    if (page.skipped === 0 || servedMost >= 2) return { action: 'done', reason: 'empty' };
    if (pagesDone > maxPages) return { action: 'stop', reason: 'max-pages' };
    return { action: 'next', offset: next, anchored: false };
  }
  if (page.whole) return { action: 'done', reason: 'unpaginated' };
  if (pagesDone > maxPages || (pagesDone >= maxPages && page.count >= page.limit)) {
    return { action: 'stop', reason: 'max-pages' };
  }
  return { action: 'next', offset: next, anchored: true };
}

/**
 * The operator's silent cap on `limit`, once two pages prove it (pure): a page shorter than asked,
 * then the next page, also with new records, exactly as long. One short page followed by more is
 * not proof enough: a log that grows between two requests looks the same.
 */
export function provenCap(previous: PageShape | undefined, page: PageShape): number | null {
  if (previous === undefined || previous.whole || page.whole) return null;
  if (freshCount(previous) <= 0 || freshCount(page) <= 0) return null;
  if (previous.count >= previous.limit || page.count !== previous.count) return null;
  return page.count < page.limit ? page.count : null;
}

/** The `limit` to ask for: the configured page size, or less where the operator was found to cap it. */
export function effectivePageSize(configured: number, learned: number | null | undefined): number {
  return learned ? Math.min(configured, learned) : configured;
}

/** Where an incremental units run starts, and which positions it must find unchanged. */
export interface LogWindow {
  /** First offset requested. */
  start: number;
  /** Positions [start, known) are the overlap, checked against the mirror. */
  known: number;
}

/** The window of an incremental run over a log whose first `known` positions the mirror holds (pure). */
export function logWindow(known: number, overlap: number): LogWindow {
  return { start: Math.max(0, known - overlap), known };
}
