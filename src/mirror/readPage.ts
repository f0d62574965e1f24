import { type ListBody, parseListElement } from '../operator/readBody.js';
import { rawKey } from './decide.js';
import { isSamePage, isUnpaginated, type PageShape } from './pager.js';
import type { ListResource } from './resources.js';
import type { FetchedRecord } from './writer.js';

/**
 * Reads one body into batches for `handle`. A page larger than the limit is the whole list from
 * position 0; a streamed body is held back only until that is known (limit + 1 records).
 *
 * Past that head, a streamed batch holds element texts, each parsed only as it is written: a batch
 * waits across network reads and its write allocates a few MB, so whatever it holds survives
 * young-generation collections and is promoted. Holding parsed records (object trees) made the old
 * generation grow by tens of MB per cycle on a 1,000,000-record body (`--trace-gc-nvp`).
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
  let rest: AsyncIterator<string> | undefined;
  if (body.kind === 'array') {
    head = body.records as unknown[];
  } else {
    const iterator = body.texts[Symbol.asyncIterator]();
    head = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      head.push(parseListElement(next.value));
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
  const position = () => (positioned ? base + done + batch.length : null);
  const push = (record: FetchedRecord) => {
    batch.push(record);
    if (batch.length >= batchSize) {
      done += batch.length;
      handle(batch, base + done);
      batch = [];
    }
  };
  for (const value of head) push({ value, position: position() });
  head = []; // a streamed head would otherwise stay reachable for the whole body
  if (rest) {
    for (let next = await rest.next(); !next.done; next = await rest.next())
      push({ text: next.value, position: position() });
  }
  done += batch.length;
  handle(batch, base + done);
  return { ...shape, count: done + skipped };
}
