/**
 * Paging decisions, pure: where the next page starts, whether the list ignores paging, when to stop.
 * Offsets drift while the operator changes; the writer de-duplicates by key, and tombstones wait for a
 * complete scan, so the pager only has to not loop forever and not misread an unpaginated list.
 */

/** What one page looked like, enough to tell the same page served twice. */
export interface PageShape {
  offset: number;
  count: number;
  firstKey: string | null;
  lastKey: string | null;
}

/** What the loop does after a page. */
export type PageDecision =
  | { action: 'next'; offset: number }
  | { action: 'done'; reason: 'short-page' | 'empty' | 'unpaginated' | 'same-page' }
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

/** Decides what follows a page that was read and written (the same-page check comes before writing). */
export function afterPage(page: PageShape, limit: number, pagesDone: number, maxPages: number): PageDecision {
  if (page.count === 0) return { action: 'done', reason: 'empty' };
  if (isUnpaginated(page.count, limit)) return { action: 'done', reason: 'unpaginated' };
  if (page.count < limit) return { action: 'done', reason: 'short-page' };
  if (pagesDone >= maxPages) return { action: 'stop', reason: 'max-pages' };
  return { action: 'next', offset: page.offset + page.count };
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
