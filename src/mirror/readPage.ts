import type { ListBody } from '../operator/readBody.js';
import { rawKey } from './decide.js';
import { isSamePage, isUnpaginated, type PageShape } from './pager.js';
import type { ListResource } from './resources.js';
import type { FetchedRecord } from './writer.js';

/**
 * Reads one body into batches for `handle`. A page larger than the limit is the whole list from
 * position 0; a streamed body is held back only until that is known (limit + 1 records).
 */
export async function readPage(
  body: ListBody,
  offset: number,
  limit: number,
  previous: PageShape | undefined,
  resource: ListResource,
  anchor: string | null,
  onDrift: () => void,
  handle: (records: FetchedRecord[], nextOffset: number) => void,
): Promise<PageShape | 'same-page'> {
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
    count: head.length,
    firstKey: rawKey(head[0], resource.key),
    lastKey: rawKey(head[head.length - 1], resource.key),
  };
  if (rest === undefined && isSamePage(previous, shape)) return 'same-page';
  const unpaginated = rest !== undefined || isUnpaginated(head.length, limit);
  let base = unpaginated ? 0 : offset;
  let skipped = 0;
  if (!unpaginated && anchor !== null) {
    if (head.length > 0 && rawKey(head[0], resource.key) === anchor) {
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
  return { ...shape, count: done + skipped };
}
