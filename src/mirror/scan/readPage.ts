import type { ListBody } from '../../operator/listBody.js';
import { recordKey } from '../../operator/schemas.js';
import type { ListResource } from '../resources.js';
import type { FetchedRecord } from '../writeDecision.js';
import { classifyBody, type PageRequest, type PageShape } from './pager.js';

/** Records of one page to write together, and the offset the scan resumes at once they are. */
export interface Batch {
  records: FetchedRecord[];
  nextOffset: number;
}

/** One body as read: what it is, and its records in batches. */
export type Page =
  /** The page before again: the list ignores offset; nothing to write. */
  | { kind: 'same-page' }
  | {
      kind: 'page';
      /** The expected anchor was not the first record: records moved under the offsets. */
      drifted: boolean;
      /** The page's shape, `count` being the head's until the batches are read (see {@link pageShape}). */
      shape: PageShape;
      /** The records, positioned, in batches; read once. The last batch may be empty. */
      batches: AsyncIterable<Batch>;
      /** The body's size when it was read whole into memory and parsed at once (null: streamed). */
      bytes: number | null;
    };

/**
 * Reads the head of a body (all of it when it was parsed at once; up to `limit + 1` records of a
 * streamed one) to tell what it is; the rest is read as the batches are. Whole bodies are positioned
 * from 0, others from the offset asked (after the anchor, which is dropped).
 */
export async function readPage(body: ListBody, request: PageRequest, resource: ListResource): Promise<Page> {
  let head: unknown[];
  let rest: AsyncIterator<unknown> | undefined;
  if (body.kind === 'array') {
    head = body.records as unknown[];
  } else {
    const iterator = body.records[Symbol.asyncIterator]();
    head = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      head.push(next.value);
      if (head.length > request.limit) {
        rest = iterator;
        break;
      }
    }
  }
  const firstKey = recordKey(head[0], resource.key);
  const lastKey = recordKey(head[head.length - 1], resource.key);
  const body_ = classifyBody(request, { count: head.length, more: rest !== undefined, firstKey, lastKey });
  if (body_.kind === 'same-page') return { kind: 'same-page' };
  const skipped = body_.anchor === 'anchored' ? 1 : 0;
  const shape: PageShape = {
    offset: request.offset,
    limit: request.limit,
    count: head.length,
    skipped,
    whole: body_.whole,
    firstKey,
    lastKey,
  };
  const base = (body_.whole ? 0 : request.offset) + skipped;
  const batchSize = Math.max(request.limit, 100);
  return {
    kind: 'page',
    drifted: body_.anchor === 'drifted',
    shape,
    batches: batches(skipped ? head.slice(1) : head, rest, base, resource.positioned, batchSize),
    bytes: body.kind === 'array' ? body.bytes : null,
  };
}

/** The page's shape once `read` records of its batches were read (pure). */
export function pageShape(shape: PageShape, read: number): PageShape {
  return { ...shape, count: read + shape.skipped };
}

async function* batches(
  head: unknown[],
  rest: AsyncIterator<unknown> | undefined,
  base: number,
  positioned: boolean,
  size: number,
): AsyncGenerator<Batch> {
  let done = 0;
  let records: FetchedRecord[] = [];
  const take = (value: unknown): Batch | null => {
    records.push({ value, position: positioned ? base + done + records.length : null });
    if (records.length < size) return null;
    done += records.length;
    const batch = { records, nextOffset: base + done };
    records = [];
    return batch;
  };
  for (const value of head) {
    const batch = take(value);
    if (batch) yield batch;
  }
  if (rest) {
    for (let next = await rest.next(); !next.done; next = await rest.next()) {
      const batch = take(next.value);
      if (batch) yield batch;
    }
  }
  done += records.length;
  yield { records, nextOffset: base + done };
}
