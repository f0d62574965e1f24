import { describe, expect, it } from 'vitest';
import {
  afterPage,
  type BodyHead,
  classifyBody,
  effectivePageSize,
  type PageRequest,
  type PageShape,
  provenCap,
} from '../../src/mirror/scan/pager.js';

/** A page as the pager sees it; keys are irrelevant to these decisions. */
const page = (offset: number, limit: number, count: number, extra: Partial<PageShape> = {}): PageShape => ({
  offset,
  limit,
  count,
  skipped: offset > 0 ? 1 : 0,
  whole: false,
  firstKey: null,
  lastKey: null,
  ...extra,
});

describe('pager decisions', () => {
  it('a short page is not the end: it asks again where the page stopped', () => {
    expect(afterPage(page(0, 500, 100), 1, 1000, 100)).toEqual({
      action: 'next',
      offset: 100,
      anchored: true,
    });
    // Anchored pages start one record early: the next offset is past every record read.
    expect(afterPage(page(99, 500, 100), 2, 1000, 100)).toEqual({
      action: 'next',
      offset: 199,
      anchored: true,
    });
  });

  it('only a page with nothing new, or the whole list, ends the scan', () => {
    expect(afterPage(page(0, 500, 0), 1, 1000, 0)).toEqual({ action: 'done', reason: 'empty' });
    // Only the re-read anchor came back: nothing follows it.
    expect(afterPage(page(199, 500, 1), 3, 1000, 100)).toEqual({ action: 'done', reason: 'empty' });
    expect(afterPage(page(0, 100, 3000, { whole: true }), 1, 1000, 3000)).toEqual({
      action: 'done',
      reason: 'unpaginated',
    });
    // A body that starts the log, shorter than the limit, is the whole log too.
    expect(afterPage(page(400, 500, 500, { whole: true, skipped: 0 }), 1, 1000, 500)).toEqual({
      action: 'done',
      reason: 'unpaginated',
    });
  });

  it('a page of only the anchor ends the scan once the operator served two records at once', () => {
    // With a cap of 1 the anchor fills the page: ask again at the offset itself, without one.
    expect(afterPage(page(0, 20, 1, { skipped: 1 }), 2, 1000, 1)).toEqual({
      action: 'next',
      offset: 1,
      anchored: false,
    });
    expect(afterPage(page(1, 20, 0, { skipped: 0 }), 3, 1000, 1)).toEqual({
      action: 'done',
      reason: 'empty',
    });
    expect(afterPage(page(0, 20, 1, { skipped: 1 }), 2, 1000, 2)).toEqual({
      action: 'done',
      reason: 'empty',
    });
  });

  it('max_pages stops full pages but lets a short last page prove the end', () => {
    expect(afterPage(page(38, 20, 20), 3, 3, 20)).toEqual({ action: 'stop', reason: 'max-pages' });
    // The third page was short: one more request decides whether the list ended there.
    expect(afterPage(page(38, 20, 7), 3, 3, 20)).toEqual({ action: 'next', offset: 45, anchored: true });
    expect(afterPage(page(44, 20, 1), 4, 3, 20)).toEqual({ action: 'done', reason: 'empty' });
    // Short pages cannot page forever past the limit either.
    expect(afterPage(page(44, 20, 7), 4, 3, 20)).toEqual({ action: 'stop', reason: 'max-pages' });
  });

  it('a cap is proven by two short pages of the same length, both with new records', () => {
    expect(provenCap(page(0, 500, 100), page(99, 500, 100))).toBe(100);
    // The list may simply have ended, then grown: one short page followed by more is no proof.
    expect(provenCap(page(0, 500, 130), page(129, 500, 4))).toBeNull();
    expect(provenCap(undefined, page(0, 500, 100))).toBeNull();
    // Full pages prove nothing; nor does a page holding only the anchor.
    expect(provenCap(page(0, 100, 100), page(99, 100, 100))).toBeNull();
    expect(provenCap(page(0, 500, 1), page(0, 500, 1, { skipped: 1 }))).toBeNull();
    // A whole-list body is no page.
    expect(provenCap(page(0, 500, 100), page(99, 500, 100, { whole: true }))).toBeNull();
  });

  it('pages with the configured size or the learned cap, whichever is smaller', () => {
    expect(effectivePageSize(500, null)).toBe(500);
    expect(effectivePageSize(500, 100)).toBe(100);
    expect(effectivePageSize(50, 100)).toBe(50);
  });
});

describe('what a body is (the one place that decides whether a list ignores paging)', () => {
  const req = (offset: number, extra: Partial<PageRequest> = {}): PageRequest => ({
    offset,
    limit: 100,
    previous: undefined,
    anchor: null,
    logStartKey: null,
    ...extra,
  });
  const head = (count: number, firstKey: string | null, lastKey: string | null, more = false): BodyHead => ({
    count,
    more,
    firstKey,
    lastKey,
  });
  const before = page(0, 100, 100, { firstKey: 'a', lastKey: 'z', skipped: 0 });
  const rows: [string, PageRequest, BodyHead, ReturnType<typeof classifyBody>][] = [
    ['a first page', req(0), head(100, 'a', 'z'), { kind: 'page', whole: false, anchor: 'none' }],
    [
      'a later page that starts on the anchor',
      req(99, { anchor: 'z', previous: before }),
      head(100, 'z', 'zz'),
      { kind: 'page', whole: false, anchor: 'anchored' },
    ],
    [
      'a later page that does not: records moved',
      req(99, { anchor: 'z', previous: before }),
      head(100, 'y', 'zz'),
      { kind: 'page', whole: false, anchor: 'drifted' },
    ],
    [
      'an empty page where an anchor was expected: drift too',
      req(99, { anchor: 'z' }),
      head(0, null, null),
      { kind: 'page', whole: false, anchor: 'drifted' },
    ],
    [
      'the same page again: the list ignores offset',
      req(99, { anchor: 'z', previous: before }),
      head(100, 'a', 'z'),
      { kind: 'same-page' },
    ],
    [
      'longer than the limit: the whole list',
      req(0),
      head(101, 'a', 'q'),
      { kind: 'page', whole: true, anchor: 'none' },
    ],
    [
      'a streamed body with more to come: the whole list, never the same page',
      req(99, { anchor: 'z', previous: before }),
      head(100, 'a', 'z', true),
      { kind: 'page', whole: true, anchor: 'none' },
    ],
    [
      "a later offset answered with the log's first record: the whole log, however short",
      req(400, { logStartKey: '0' }),
      head(50, '0', '49'),
      { kind: 'page', whole: true, anchor: 'none' },
    ],
    [
      "the log's first record at offset 0 is just the first page",
      req(0, { logStartKey: '0' }),
      head(50, '0', '49'),
      { kind: 'page', whole: false, anchor: 'none' },
    ],
  ];
  for (const [name, request, body, expected] of rows) {
    it(name, () => expect(classifyBody(request, body)).toEqual(expected));
  }
});
