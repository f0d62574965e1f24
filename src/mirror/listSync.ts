import { isoAt } from '../clock.js';
import type { AppContext } from '../context.js';
import { rawKey } from './decide.js';
import { finishScan } from './finishScan.js';
import { OverlapMismatch, requireCompleteOverlap, verifyOverlap } from './overlap.js';
import { afterPage, effectivePageSize, type PageShape, provenCap } from './pager.js';
import { freshFullScan, type ScanPlan } from './plan.js';
import { type RunCounts, syncQueries } from './queries.js';
import { readPage } from './readPage.js';
import type { ListResource } from './resources.js';
import { realSleep, withRetry } from './retry.js';
import { batchCheckpoint, logCheckpoint, type ScanState } from './scanState.js';
import { tableQueries } from './tableQueries.js';
import { type FetchedRecord, RecordWriter } from './writer.js';

/** Thrown between pages when the run was asked to stop; the checkpoint is kept. */
export class RunAborted extends Error {
  constructor() {
    super('stopped before the run finished; the next run resumes from the checkpoint');
    this.name = 'RunAborted';
  }
}

/** What a list run needs besides the context. */
export interface ListSyncOptions {
  runId: number;
  plan: ScanPlan;
  counts: RunCounts;
  /** How retries wait (default: setTimeout). */
  sleep?: (ms: number) => Promise<void>;
  /** Stops the run between batches (default: none). */
  signal?: AbortSignal;
  /** Called after each committed batch (default: none). */
  onProgress?: (counts: RunCounts) => void;
  /** Called when an incremental run falls back to a full scan (default: none). */
  onModeChange?: (mode: 'full') => void;
}

/** How a list run ended when it did not throw. */
export interface ListSyncResult {
  mode: 'full' | 'incremental';
  /** Set when the run finished its scan but refused to tombstone (too large a share). */
  refusal: string | null;
}

/** Syncs one public list: a full scan (fresh or resumed) or an incremental pass over the units log. */
export async function syncList(
  ctx: AppContext,
  resource: ListResource,
  options: ListSyncOptions,
): Promise<ListSyncResult> {
  // Shared by both attempts, so a page size learned before a fallback is not learned twice.
  const paging: Paging = { pageSize: options.plan.pageSize ?? null };
  try {
    return await scan(ctx, resource, options, options.plan, paging);
  } catch (err) {
    if (!(err instanceof OverlapMismatch)) throw err;
    ctx.log.warn(
      {
        event: 'sync.units.overlap_mismatch',
        resource: resource.target,
        runId: options.runId,
        detail: err.message,
      },
      'the units overlap does not match the mirror; falling back to a full scan',
    );
    options.onModeChange?.('full');
    return await scan(ctx, resource, options, freshFullScan(paging.pageSize), paging);
  }
}

/** The operator's page-size cap as far as this run knows it. */
interface Paging {
  pageSize: number | null;
}

async function scan(
  ctx: AppContext,
  resource: ListResource,
  options: ListSyncOptions,
  plan: ScanPlan,
  paging: Paging,
): Promise<ListSyncResult> {
  const { sqlite } = ctx.database;
  const { config, clock, log } = ctx;
  const table = tableQueries(sqlite, resource);
  const sync = syncQueries(sqlite);
  const now = () => isoAt(clock.now());

  let trackSeen = plan.trackSeen;
  if (trackSeen === null) {
    // Nothing live to tombstone means no seen set is needed: a first sync writes once per record.
    trackSeen = table.hasLive();
    sync.clearSeen(resource.table);
  }
  const state: ScanState = {
    plan,
    scanStartedAt: plan.scanStartedAt ?? now(),
    trackSeen,
    writer: new RecordWriter(table, sync, {
      runId: options.runId,
      trackSeen,
      counts: options.counts,
      onQuarantine: (key, reason) =>
        log.warn(
          { event: 'sync.record.quarantined', resource: resource.table, key, reason },
          'record quarantined',
        ),
    }),
    logLength: plan.window?.known ?? 0,
    overlap: new Map(),
    verified: new Set(),
    lastKey: plan.anchor ?? null,
    drifted: plan.drifted ?? false,
    incomplete: null,
    pageSize: paging.pageSize,
  };
  // Incremental runs know the log's first record: a body that starts with it is the whole log.
  let logStartKey: string | null = null;
  if (plan.window) {
    for (const row of table.overlapRows(plan.window.start, plan.window.known))
      state.overlap.set(row.position, row);
    logStartKey = table.overlapRows(0, 1)[0]?.key ?? null;
  }

  const commitBatch = sqlite.transaction((records: FetchedRecord[], nextOffset: number) => {
    const at = now();
    for (const record of records) state.writer.apply(record, at);
    sync.putCheckpoint(batchCheckpoint(resource, options.runId, state, nextOffset), at);
    sync.progress(options.runId, options.counts);
  });

  /** Routes a batch: overlap positions are checked, new ones written with the checkpoint. */
  const handle = (records: FetchedRecord[], nextOffset: number) => {
    options.counts.fetched += records.length;
    if (records.length > 0) state.lastKey = rawKey(records[records.length - 1]!.value, resource.key);
    const fresh: FetchedRecord[] = [];
    for (const record of records) {
      const position = record.position ?? 0;
      if (plan.window && position < plan.window.known) {
        if (position >= plan.window.start) verifyOverlap(state, resource, record);
        continue;
      }
      if (plan.window) {
        // A whole-log body read again after earlier pages of this run: those positions are written.
        if (position < state.logLength) continue;
        requireCompleteOverlap(state);
        state.logLength = position + 1;
      }
      fresh.push(record);
    }
    if (plan.window && fresh.length === 0) return;
    commitBatch.immediate(fresh, nextOffset);
    options.onProgress?.(options.counts);
  };

  let offset = plan.startOffset;
  let previous: PageShape | undefined;
  const onDrift = () => {
    if (plan.window) throw new OverlapMismatch(`records moved in the log near offset ${offset}`);
    if (!state.drifted) {
      log.warn(
        { event: 'sync.list.drift', resource: resource.target, offset },
        'records moved under the pager',
      );
    }
    state.drifted = true;
  };
  let pages = 0;
  let servedMost = 0;
  let anchored = true;
  for (;;) {
    if (options.signal?.aborted) throw new RunAborted();
    const limit = effectivePageSize(config.sync.page_size, state.pageSize);
    const page = await withRetry(
      async () => {
        // Each later page starts one record early: finding the previous page's last record there
        // proves nothing moved under the offsets.
        const anchor = offset > 0 && !plan.window && anchored ? state.lastKey : null;
        const at = anchor === null ? offset : offset - 1;
        const body = await ctx
          .operator()
          // The stop signal cancels a page in flight too: a GET has no effect to lose, and the
          // checkpoint of the pages already written is kept.
          .list(resource.operation, resource.path, { limit, offset: at }, { signal: options.signal });
        return readPage(
          body,
          { offset: at, limit, previous, anchor, logStartKey },
          resource,
          onDrift,
          handle,
        );
      },
      {
        attempts: config.sync.page_attempts,
        capMs: config.sync.retry_cap_ms,
        sleep: options.sleep ?? realSleep,
        signal: options.signal,
        onRetry: (err, attempt, waitMs) =>
          log.warn(
            {
              event: 'sync.page.retry',
              resource: resource.target,
              offset,
              attempt,
              waitMs,
              kind: err.kind,
              error: err.message,
            },
            'page failed; retrying',
          ),
      },
    );
    pages++;
    options.counts.pages++;
    if (page === 'same-page') {
      if (plan.mode === 'full') state.logLength = offset;
      // A list that ignores offset and was cut at `limit` may hold more than this one page.
      if (previous && previous.count >= previous.limit)
        state.incomplete = `the list ignores offset and answered only ${previous.count} records`;
      const fields = {
        event: 'sync.list.same_page',
        resource: resource.target,
        offset,
        records: previous?.count,
      };
      if (state.incomplete) log.warn(fields, `list ignores offset; ${state.incomplete}`);
      else log.info(fields, 'list ignores offset; read as one body');
      break;
    }
    if (page.whole) {
      log.info(
        { event: 'sync.list.unpaginated', resource: resource.target, records: page.count },
        'list ignores paging',
      );
    }
    learnPageSize(ctx, resource, state, paging, provenCap(previous, page), limit);
    servedMost = Math.max(servedMost, page.count);
    const decision = afterPage(page, pages, config.sync.max_pages, servedMost);
    if (decision.action === 'done') {
      if (plan.mode === 'full')
        state.logLength = page.whole ? page.count : Math.max(offset, page.offset + page.count);
      break;
    }
    if (decision.action === 'stop') {
      throw new Error(
        `${resource.target}: stopped after sync.max_pages=${config.sync.max_pages} pages; the next run resumes`,
      );
    }
    offset = decision.offset;
    anchored = decision.anchored;
    previous = page;
  }

  if (plan.window) {
    requireCompleteOverlap(state);
    // A page size learned by a run that wrote nothing new is kept too.
    if (state.pageSize !== (plan.pageSize ?? null))
      sync.putCheckpoint(logCheckpoint(resource, options.runId, state), now());
    return { mode: plan.mode, refusal: null };
  }
  return { mode: plan.mode, refusal: finishScan(ctx, resource, options, state) };
}

/** Takes a cap two pages proved, when it is below what the scan asks: logged once, kept with the checkpoint. */
function learnPageSize(
  ctx: AppContext,
  resource: ListResource,
  state: ScanState,
  paging: Paging,
  cap: number | null,
  limit: number,
): void {
  if (cap === null || cap >= limit) return;
  state.pageSize = cap;
  paging.pageSize = cap;
  ctx.log.warn(
    {
      event: 'sync.list.page_capped',
      resource: resource.target,
      requested: limit,
      pageSize: cap,
      configured: ctx.config.sync.page_size,
    },
    `the operator serves at most ${cap} ${resource.target} per page; paging with ${cap} from now on`,
  );
}
