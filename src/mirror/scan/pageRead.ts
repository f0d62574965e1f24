import { setImmediate as nextTurn } from 'node:timers/promises';
import type { AppContext } from '../../context.js';
import type { ListBody } from '../../operator/listBody.js';
import { recordKey } from '../../operator/schemas.js';
import type { ListResource } from '../resources.js';
import { type Retry, readRetry } from '../retry.js';
import type { FetchedRecord } from '../writeDecision.js';
import { classifyBody, type PageRequest, type PageShape } from './pager.js';

/** Records of one page to write together, and the offset the scan resumes at once they are. */
export interface Batch {
  records: FetchedRecord[];
  nextOffset: number;
  /**
   * Bytes of the body this batch was read from: a page parsed at once counts all of its body with
   * its first batch (0 with the others); a streamed one, what was split since the batch before.
   */
  bytes: number;
  /** Read from a body streamed record by record (a list that ignores paging), not parsed at once. */
  streamed: boolean;
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
    };

/**
 * Reads the head of a body (all of it when it was parsed at once; up to `limit + 1` records of a
 * streamed one) to tell what it is; the rest is read as the batches are. Whole bodies are positioned
 * from 0, others from the offset asked (after the anchor, which is dropped).
 */
export async function readPage(body: ListBody, request: PageRequest, resource: ListResource): Promise<Page> {
  let head: unknown[];
  let wire: readonly Uint8Array[] | undefined;
  let rest: AsyncIterator<unknown> | undefined;
  if (body.kind === 'array') {
    head = body.records as unknown[];
    wire = body.wire;
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
  // What the batches read so far hold: the whole body at once, or what the stream split so far.
  const bytesRead = body.kind === 'array' ? () => body.bytes : body.bytesRead;
  const streamed = body.kind === 'stream';
  return {
    kind: 'page',
    drifted: body_.anchor === 'drifted',
    shape,
    batches: batches(skipped ? head.slice(1) : head, rest, base, resource.positioned, batchSize, {
      bytesRead,
      streamed,
      wire: skipped ? wire?.slice(1) : wire,
    }),
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
  body: { bytesRead: () => number; streamed: boolean; wire: readonly Uint8Array[] | undefined },
): AsyncGenerator<Batch> {
  const { bytesRead, streamed, wire } = body;
  let done = 0;
  let counted = 0;
  let records: FetchedRecord[] = [];
  const bytesSince = () => {
    const read = bytesRead();
    const bytes = read - counted;
    counted = read;
    return bytes;
  };
  const take = (value: unknown, sent?: Uint8Array): Batch | null => {
    records.push({ value, position: positioned ? base + done + records.length : null, wire: sent });
    if (records.length < size) return null;
    done += records.length;
    const batch = { records, nextOffset: base + done, bytes: bytesSince(), streamed };
    records = [];
    return batch;
  };
  for (let i = 0; i < head.length; i++) {
    const batch = take(head[i], wire?.[i]);
    if (batch) yield batch;
  }
  if (rest) {
    for (let next = await rest.next(); !next.done; next = await rest.next()) {
      const batch = take(next.value);
      if (batch) yield batch;
    }
  }
  done += records.length;
  yield { records, nextOffset: base + done, bytes: bytesSince(), streamed };
}

/** How a read waits between attempts and what stops it (the run's options). */
export interface ReadOptions {
  sleep?: ((ms: number) => Promise<void>) | undefined;
  signal?: AbortSignal | undefined;
}

/**
 * One page's read from the operator, started when it is created: the request, the page once its
 * head is read, and the retry budget of that page (a streamed body that breaks while it is written
 * is read again within the same attempts). A read started ahead of its turn (pipelining) is
 * cancelled when the scan does not need it after all: its request and its retries stop, and its
 * failure is never reported.
 */
export class PageRead {
  readonly retry: Retry;
  /** Settles with the page, or with the error that ended its attempts. */
  page: Promise<Page>;
  private readonly controller = new AbortController();
  private readonly signal: AbortSignal;

  constructor(
    private readonly ctx: AppContext,
    private readonly resource: ListResource,
    readonly request: PageRequest,
    options: ReadOptions,
  ) {
    this.signal = options.signal
      ? AbortSignal.any([options.signal, this.controller.signal])
      : this.controller.signal;
    this.retry = readRetry(ctx, { sleep: options.sleep, signal: this.signal }, 'page failed; retrying', {
      resource: resource.name,
      // The offset the scan stands at (the request starts one early when it re-reads an anchor).
      offset: request.offset + (request.anchor === null ? 0 : 1),
    });
    this.page = this.attempts();
  }

  /** Reads the page again within the same budget (its body broke while being written). */
  again(): Promise<Page> {
    this.page = this.attempts();
    return this.page;
  }

  /** Stops the read; whatever it ends with is dropped. */
  cancel(): void {
    this.controller.abort();
  }

  /**
   * Lets the request leave before the caller blocks the thread (a SQLite commit is synchronous):
   * one turn of the event loop is what got needs to write a GET on a kept-alive socket.
   */
  async sent(): Promise<void> {
    await nextTurn();
  }

  private attempts(): Promise<Page> {
    const { ctx, resource, request, signal } = this;
    const page = this.retry.run(async () =>
      readPage(
        // The stop signal cancels a page in flight too: a GET has no effect to lose, and the
        // checkpoint of the pages already written is kept.
        await ctx
          .operator()
          .list(
            resource.operation,
            resource.path,
            { limit: request.limit, offset: request.offset },
            { signal },
          ),
        request,
        resource,
      ),
    );
    // Awaited later, or never when cancelled: a failure meanwhile is not an unhandled rejection.
    page.catch(() => {});
    return page;
  }
}
