import { isoAt } from '../../common/clock.js';
import type { AppContext } from '../../context.js';
import { type RunCounts, withTally } from '../bookkeeping.js';
import type { ListResource } from '../resources.js';
import { logSchemaChanges } from '../shape/shapeLog.js';
import type { MirrorStore } from '../store.js';
import { OverlapMismatch, RunAborted } from '../syncErrors.js';
import {
  closeFull,
  closeIncremental,
  endPage,
  freshFullScan,
  markDrift,
  nextRequest,
  type PageEnding,
  requestAfter,
  type ScanCursor,
  type ScanPlan,
  startCursor,
  tombstoneVerdict,
} from './cursor.js';
import { HeldWrites, logQuarantined } from './heldWrites.js';
import { PageRead, pageShape } from './pageRead.js';
import { type PageShape, sameRequest } from './pager.js';

/** What a list run needs besides the context. */
export interface ListSyncOptions {
  runId: number;
  plan: ScanPlan;
  /** The run's counts: this driver is the only one to change them. */
  counts: RunCounts;
  /** How retries wait (default: setTimeout). */
  sleep?: (ms: number) => Promise<void>;
  /** Stops the run between batches (default: none). */
  signal?: AbortSignal;
  /** Called after each committed batch (default: none). */
  onProgress?: (counts: RunCounts) => void;
  /**
   * Called as each batch is read, before it is held; a throw fails the run with nothing of the
   * batch committed: the record cap trips here, not a held commit later (default: none).
   */
  onFetched?: (counts: RunCounts) => void;
  /** Called when an incremental run falls back to a full scan (default: none). */
  onModeChange?: (mode: 'full') => void | Promise<void>;
  /** Where the batches go. */
  store: MirrorStore;
}

/** How a list run ended when it did not throw. */
export interface ListSyncResult {
  mode: 'full' | 'incremental';
  /** Set when the run finished its scan but refused to tombstone (too large a share). */
  refusal: string | null;
}

/**
 * Syncs one public list: a full scan (fresh or resumed) or an incremental pass over the units log,
 * falling back to a full scan when the log's overlap does not match the mirror. The loop: ask the
 * cursor for the next request, fetch it (retried), write each batch with its checkpoint in one
 * store call, ask the cursor what follows.
 */
export async function syncList(
  ctx: AppContext,
  resource: ListResource,
  options: ListSyncOptions,
): Promise<ListSyncResult> {
  const now = () => isoAt(ctx.clock.now());
  const { store } = options;
  // Records the shape policy quarantined go first: a policy or mapping changed since admits them.
  const reapplied = await store.reapplyQuarantined(options.runId, options.counts);
  if (reapplied) {
    Object.assign(options.counts, withTally(options.counts, reapplied.tally));
    logQuarantined(ctx, resource.name, resource.table, reapplied);
  }
  const open = async (plan: ScanPlan) => startCursor(resource, plan, await store.startScan(plan, now()));
  const first = await open(options.plan);
  try {
    return await scan(ctx, resource, store, first, options);
  } catch (err) {
    if (!(err instanceof OverlapMismatch)) throw err;
    ctx.log.warn(
      {
        event: 'sync.units.overlap_mismatch',
        resource: resource.name,
        runId: options.runId,
        detail: err.message,
      },
      'the units overlap does not match the mirror; falling back to a full scan',
    );
    await options.onModeChange?.('full');
    // A page size learned before the fallback is not learned twice.
    return await scan(ctx, resource, store, await open(freshFullScan(first.pageSize)), options);
  }
}

/** The driver loop of one scan. */
async function scan(
  ctx: AppContext,
  resource: ListResource,
  store: MirrorStore,
  cursor: ScanCursor,
  options: ListSyncOptions,
): Promise<ListSyncResult> {
  const { config, log } = ctx;
  const { counts, runId } = options;
  // At most one page read ahead of the page being written (see fetchAndWrite).
  const pipe: Pipe = { ahead: null };
  const writes = new HeldWrites(ctx, resource, store, cursor, options);
  try {
    for (;;) {
      if (options.signal?.aborted) throw new RunAborted();
      const request = nextRequest(cursor, config.sync.page_size);
      const ahead = pipe.ahead;
      pipe.ahead = null;
      // The read sent ahead is used only if the written page led to the very request it made.
      const read =
        ahead && sameRequest(ahead.request, request) ? ahead : new PageRead(ctx, resource, request, options);
      if (ahead && ahead !== read) ahead.cancel();
      const page = await fetchAndWrite(ctx, resource, cursor, read, writes, options, pipe);
      counts.pages++;
      const ending = endPage(cursor, page, config.sync.max_pages);
      logPageEnd(ctx, resource, cursor, page, ending, request.limit);
      if (ending.end.next === 'done') break;
      if (ending.end.next === 'max-pages') {
        await writes.flush();
        throw new Error(
          `${resource.name}: stopped after sync.max_pages=${config.sync.max_pages} pages; the next run resumes`,
        );
      }
    }
    await writes.flush();
    // A stop asked for while the last pages committed still leaves the scan unfinished.
    if (options.signal?.aborted) throw new RunAborted();
  } catch (err) {
    await writes.settle();
    throw err;
  } finally {
    // A failed write, a stop, or a scan that ended otherwise than predicted: the read ahead goes.
    pipe.ahead?.cancel();
  }

  if (cursor.mode === 'incremental') {
    const checkpoint = closeIncremental(cursor, runId);
    if (checkpoint) await store.putCheckpoint(checkpoint);
    return { mode: cursor.mode, refusal: null };
  }
  const verdict = tombstoneVerdict(cursor);
  const { removed, refusal, schemaChanges } = await store.finishScan({
    runId,
    resource: resource.name,
    verdict,
    maxRemoveShare: config.sync.max_remove_share,
    checkpoint: closeFull(cursor, runId),
    counts,
    scanStartedAt: cursor.scanStartedAt,
  });
  logSchemaChanges(log, schemaChanges);
  counts.removed += removed;
  if (verdict.kind === 'skip') {
    log.warn(
      { event: 'sync.remove.skipped', resource: resource.name, runId },
      `${verdict.reason}; removals wait for the next complete scan`,
    );
  }
  if (refusal) log.error({ event: 'sync.remove.refused', resource: resource.name, runId }, refusal);
  return { mode: cursor.mode, refusal };
}

/** The read sent ahead of the page being written, if any. */
interface Pipe {
  ahead: PageRead | null;
}

/**
 * One page: read with retries, then written batch by batch. As soon as the page is read (and before
 * it is written) the request that follows it is known, and sent: the operator prepares the next
 * page and its bytes arrive while this one commits (pipelining, one page ahead at most, since the
 * page after that is asked for only once the next one is read). Checkpoints still commit with
 * their data, in order: only writes commit, and they stay one after another. A streamed body that
 * breaks part-way is fetched again within the same attempts: the batches it already committed are
 * re-read as held (units) or seen (lists), never written twice.
 */
async function fetchAndWrite(
  ctx: AppContext,
  resource: ListResource,
  cursor: ScanCursor,
  read: PageRead,
  writes: HeldWrites,
  options: ListSyncOptions,
  pipe: Pipe,
): Promise<PageShape | 'same-page'> {
  const { sync } = ctx.config;
  for (let attempt = read.page; ; attempt = read.again()) {
    const page = await attempt;
    if (page.kind === 'same-page') return 'same-page';
    if (page.drifted && markDrift(cursor)) {
      ctx.log.warn(
        { event: 'sync.list.drift', resource: resource.name, offset: cursor.offset },
        'records moved under the pager',
      );
    }
    const next = requestAfter(cursor, page.shape, sync.page_size, sync.max_pages);
    if (next) {
      pipe.ahead = new PageRead(ctx, resource, next, options);
      await pipe.ahead.sent();
    }
    // Every batch is held for the next commit, a page read whole as well as one of a body streamed
    // record by record (a list that ignores paging): commits of up to HELD_RECORDS records, HELD_BYTES
    // of body (HELD_STREAM_BYTES streamed) or HELD_MS, whichever comes first, so memory stays
    // bounded by what one commit holds.
    let count = 0;
    try {
      for await (const batch of page.batches) {
        await writes.add(batch.records, batch.nextOffset, batch.bytes, batch.streamed);
        count += batch.records.length;
      }
      return pageShape(page.shape, count);
    } catch (err) {
      pipe.ahead?.cancel();
      pipe.ahead = null;
      await read.retry.failed(err);
    }
  }
}

/** The log lines a page's end calls for: a proven cap, a list that ignores paging. */
function logPageEnd(
  ctx: AppContext,
  resource: ListResource,
  cursor: ScanCursor,
  page: PageShape | 'same-page',
  { capped }: PageEnding,
  limit: number,
): void {
  const { log } = ctx;
  if (page === 'same-page') {
    const fields = {
      event: 'sync.list.same_page',
      resource: resource.name,
      offset: cursor.offset,
      records: cursor.previous?.count,
    };
    if (cursor.incomplete) log.warn(fields, `list ignores offset; ${cursor.incomplete}`);
    else log.info(fields, 'list ignores offset; read as one body');
    return;
  }
  if (page.whole) {
    log.info(
      { event: 'sync.list.unpaginated', resource: resource.name, records: page.count },
      'list ignores paging',
    );
  }
  if (capped) {
    log.warn(
      {
        event: 'sync.list.page_capped',
        resource: resource.name,
        requested: limit,
        pageSize: capped.pageSize,
        configured: ctx.config.sync.page_size,
      },
      `the operator serves at most ${capped.pageSize} ${resource.name} per page; paging with ${capped.pageSize} from now on`,
    );
  }
}
