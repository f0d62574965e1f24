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

/** One page request, and what the scan expects of its body. */
export interface PageRequest {
  offset: number;
  limit: number;
  /** The page before, to tell the same page served twice (default: none). */
  previous: PageShape | undefined;
  /** Key expected as the first record (the previous page's last), or null. */
  anchor: string | null;
  /**
   * Incremental units runs: key of the mirror's log position 0, or null. A body that starts with it
   * although it was asked for a later offset is the whole log, whatever its length.
   */
  logStartKey: string | null;
}

/** The first records of a body, as far as telling what the body is needs. */
export interface BodyHead {
  /** Records read before deciding: at most `limit + 1`. */
  count: number;
  /** More records follow the head (a streamed body longer than `limit`). */
  more: boolean;
  firstKey: string | null;
  lastKey: string | null;
}

/**
 * What a body is (pure), the one place that decides whether a list ignores paging:
 * `same-page` (the page before again: the list ignores offset), or a page that is `whole` (longer
 * than the limit, or beginning with the log's first record when asked for a later offset: the list
 * from position 0) and whose first record, when an anchor was expected, is (`anchored`) or is not
 * (`drifted`) that anchor.
 */
export function classifyBody(
  request: PageRequest,
  head: BodyHead,
): { kind: 'same-page' } | { kind: 'page'; whole: boolean; anchor: 'none' | 'anchored' | 'drifted' } {
  const shape: PageShape = {
    offset: request.offset,
    limit: request.limit,
    count: head.count,
    skipped: 0,
    whole: false,
    firstKey: head.firstKey,
    lastKey: head.lastKey,
  };
  if (!head.more && isSamePage(request.previous, shape)) return { kind: 'same-page' };
  const startsTheLog =
    request.offset > 0 && request.logStartKey !== null && head.firstKey === request.logStartKey;
  const whole = head.more || isUnpaginated(head.count, request.limit) || startsTheLog;
  if (whole || request.anchor === null) return { kind: 'page', whole, anchor: 'none' };
  const found = head.count > 0 && head.firstKey === request.anchor;
  return { kind: 'page', whole, anchor: found ? 'anchored' : 'drifted' };
}

/** What the loop does after a page. */
export type PageDecision =
  /** `anchored: false`: the next request starts at `offset` itself, without re-reading a record. */
  | { action: 'next'; offset: number; anchored: boolean }
  | { action: 'done'; reason: 'empty' | 'unpaginated' }
  | { action: 'stop'; reason: 'max-pages' };

/** A page larger than the limit: the list ignored `limit` and this body is all of it. */
function isUnpaginated(count: number, limit: number): boolean {
  return count > limit;
}

/** The same records again at a later offset: the list ignores `offset`. */
function isSamePage(previous: PageShape | undefined, page: PageShape): boolean {
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

/** Whether two requests ask the same thing and expect the same of the body (pure). */
export function sameRequest(a: PageRequest, b: PageRequest): boolean {
  const p = a.previous;
  const q = b.previous;
  const samePrevious =
    p === q ||
    (p !== undefined &&
      q !== undefined &&
      p.offset === q.offset &&
      p.limit === q.limit &&
      p.count === q.count &&
      p.skipped === q.skipped &&
      p.whole === q.whole &&
      p.firstKey === q.firstKey &&
      p.lastKey === q.lastKey);
  return (
    a.offset === b.offset &&
    a.limit === b.limit &&
    a.anchor === b.anchor &&
    a.logStartKey === b.logStartKey &&
    samePrevious
  );
}
