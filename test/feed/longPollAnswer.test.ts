import { describe, expect, it } from 'vitest';
import { type FeedEntry, toChange } from '../../src/feed/feedReads.js';
import { longPollAnswer } from '../../src/feed/longPoll.js';

const entry = (seq: number, recordId: string): FeedEntry =>
  toChange({
    seq,
    resource: 'projects',
    record_id: recordId,
    kind: 'upsert',
    at: '2026-11-26T14:00:00.000Z',
  });

describe('longPollAnswer', () => {
  it('is exactly the JSON of { items, last, head }, quotes and non-ASCII ids included', () => {
    const items = [entry(7, 'VCS-1 "quoted" \\ back'), entry(8, 'Gold-é-\u2028')];
    const text = longPollAnswer(items, 8, 12);
    expect(text).toBe(JSON.stringify({ items, last: 8, head: 12 }));
    expect(JSON.parse(text)).toEqual({ items, last: 8, head: 12 });
  });

  it('answers an empty page, and the same shared page with another last and head', () => {
    expect(longPollAnswer([], 5, 5)).toBe('{"items":[],"last":5,"head":5}');
    const page = [entry(3, 'a')];
    longPollAnswer(page, 3, 3);
    expect(JSON.parse(longPollAnswer(page, 3, 9))).toEqual({ items: page, last: 3, head: 9 });
  });
});
