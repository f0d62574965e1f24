import type { ListBody } from '../operator/readBody.js';
import { rawKey } from './decide.js';
import { isSamePage, isUnpaginated, type PageShape } from './pager.js';
import type { ListResource } from './resources.js';
import type { FetchedRecord } from './writer.js';

/** The request a body answered, and what the scan expects of it. */
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

/**
 * Reads one body into batches for `handle`. A page larger than the limit, or one that begins with
 * the log's first record when asked for a later offset, is the whole list from position 0; a
 * streamed body is held back only until that is known (limit + 1 records).
 */
export async function readPage(
  body: ListBody,
  request: PageRequest,
  resource: ListResource,
  onDrift: () => void,
  handle: (records: FetchedRecord[], nextOffset: number) => void,
): Promise<PageShape | 'same-page'> {
  const { offset, limit, anchor } = request;
  const positioned = resource.positioned;
  let head: unknown[];
  let rest: AsyncIterator<unknown> | undefined;
  if (body.kind === 'array') {
    head = body.records as unknown[];
  } else {
    const iterator = body.records[Symbol.asyncIterator]();
    head = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      head.push(next.value);
      if (head.length > limit) {
        rest = iterator;
        break;
      }
    }
  }
  const shape: PageShape = {
    offset,
    limit,
    count: head.length,
    skipped: 0,
    whole: false,
    firstKey: rawKey(head[0], resource.key),
    lastKey: rawKey(head[head.length - 1], resource.key),
  };
  if (rest === undefined && isSamePage(request.previous, shape)) return 'same-page';
  const startsTheLog = offset > 0 && request.logStartKey !== null && shape.firstKey === request.logStartKey;
  const whole = rest !== undefined || isUnpaginated(head.length, limit) || startsTheLog;
  let base = whole ? 0 : offset;
  let skipped = 0;
  if (!whole && anchor !== null) {
    if (head.length > 0 && shape.firstKey === anchor) {
      head = head.slice(1);
      base++;
      skipped = 1;
    } else {
      onDrift();
    }
  }
  let done = 0;
  const batchSize = Math.max(limit, 100);
  let batch: FetchedRecord[] = [];
  const flush = () => {
    done += batch.length;
    handle(batch, base + done);
    batch = [];
  };
  const push = (value: unknown) => {
    batch.push({ value, position: positioned ? base + done + batch.length : null });
    if (batch.length >= batchSize) flush();
  };
  for (const value of head) push(value);
  if (rest) {
    for (let next = await rest.next(); !next.done; next = await rest.next()) push(next.value);
  }
  flush();
  return { ...shape, whole, skipped, count: done + skipped };
}
