import type { AppContext } from '../../context.js';
import type { BatchResult } from '../batchPlan.js';
import { type RunCounts, withTally } from '../bookkeeping.js';
import type { ListResource } from '../resources.js';
import { logSchemaChanges } from '../shape/shapeLog.js';
import type { MirrorStore } from '../store.js';
import type { FetchedRecord } from '../writeDecision.js';
import type { Checkpoint } from './checkpoint.js';
import { admitBatch, checkpointAt, type ScanCursor } from './cursor.js';

/**
 * Records held before they commit: a batch is admitted at once but committed together with the
 * batches after it, up to this many records, in one transaction with the checkpoint of the last of
 * them; whether its page was read whole (a page of a paged list) or streamed (a list that ignores
 * paging and sends its whole log in one body). On a 1,000,000-record units sync a commit of each
 * 1000-record page cost more than the rows themselves (its fsync, and the WAL checkpoint rewriting
 * the same index pages page after page); ten pages a commit halved the write time. Memory stays
 * bounded: at most this many parsed records are held.
 */
export const HELD_RECORDS = 10_000;

/**
 * And at most this many bytes of the bodies they were read from are held (records of a few KiB
 * each would otherwise hold far more memory than 10,000 ordinary ones).
 */
export const HELD_BYTES = 8 * 1024 * 1024;

/**
 * Bytes of a streamed body held (a list that ignores paging; ~900 unit operations, whatever
 * `sync.page_size`, which used to set its commits): `vcu-sync sync` of a 1,000,000-record log in
 * one body has a memory budget (peak RSS < 120 MB, `npm run bench -- --only rss`), and on a quiet
 * host 2 MiB held cost ~6 MB more of it and more CPU, not less (docs/benchmarks.md, "The
 * unpaginated units log").
 */
export const HELD_STREAM_BYTES = 512 * 1024;

/**
 * Held records commit once this long has passed since the last commit, so a slow operator
 * (small pages, long answers) still commits page by page: progress shows, the run's idle bound
 * (`sync.idle_timeout_seconds`, reset by each commit) never sees held work as idleness, and a
 * crash loses little.
 */
export const HELD_MS = 1_000;

/** Whether held writes are to commit now (pure): enough records, enough bytes, or long enough. */
export function commitDue(
  held: { records: number; bytes: number; streamed: boolean },
  sinceCommitMs: number,
  heldRecords?: number,
): boolean {
  return (
    held.records >= (heldRecords ?? HELD_RECORDS) ||
    held.bytes >= (held.streamed ? HELD_STREAM_BYTES : HELD_BYTES) ||
    sinceCommitMs >= HELD_MS
  );
}

/** The run a scan's writes belong to, and who hears of them. */
export interface WriteRun {
  runId: number;
  counts: RunCounts;
  onProgress?: ((counts: RunCounts) => void) | undefined;
  /** Told of each batch as it is read, before it is held (driver.ts, ListSyncOptions.onFetched). */
  onFetched?: ((counts: RunCounts) => void) | undefined;
}

/**
 * The scan's writes, in order: each batch is admitted by the cursor when it is read, and committed
 * with the checkpoint it leads to. Held batches commit when enough are held ({@link commitDue}),
 * and when the scan ends or stops ({@link flush}); a checkpoint never
 * commits without the data before it, and what a failure drops was never checkpointed.
 */
export class HeldWrites {
  private records: FetchedRecord[] = [];
  private checkpoint: Checkpoint | null = null;
  private pending = false;
  /** Bytes of the page bodies held. */
  private bytes = 0;
  /** Some of what is held was streamed (its smaller byte bound applies). */
  private streamed = false;
  /** When the scan last committed (clock ms). */
  private lastCommit: number;

  constructor(
    private readonly ctx: AppContext,
    private readonly resource: ListResource,
    private readonly store: MirrorStore,
    private readonly cursor: ScanCursor,
    private readonly run: WriteRun,
  ) {
    // The scan's first batch commits at once: every run has a checkpoint (and shows progress) early,
    // and a write path that fails (a lock, a full disk) fails on one page, not ten.
    this.lastCommit = Number.NEGATIVE_INFINITY;
  }

  /**
   * Admits a batch that ends at `nextOffset`, read from `bytes` of body (`streamed`: a body read
   * record by record); it waits for {@link commitDue}.
   */
  async add(
    records: readonly FetchedRecord[],
    nextOffset: number,
    bytes: number,
    streamed = false,
  ): Promise<void> {
    this.run.counts.fetched += records.length;
    this.run.onFetched?.(this.run.counts);
    const fresh = admitBatch(this.cursor, records);
    if (fresh !== null) {
      for (const record of fresh) this.records.push(record);
      this.checkpoint = checkpointAt(this.cursor, this.run.runId, nextOffset);
      this.pending = true;
    }
    this.bytes += bytes;
    this.streamed ||= streamed;
    const held = { records: this.records.length, bytes: this.bytes, streamed: this.streamed };
    if (commitDue(held, this.ctx.clock.now() - this.lastCommit, this.store.heldRecords)) await this.flush();
  }

  /** Commits what is held, if anything, with its checkpoint. */
  async flush(): Promise<void> {
    if (!this.pending) return;
    const { records, checkpoint } = this;
    // Taken before the commit: a commit that fails drops them (its transaction rolled back).
    this.records = [];
    this.checkpoint = null;
    this.pending = false;
    this.bytes = 0;
    this.streamed = false;
    const { counts, runId } = this.run;
    const result = await this.store.commitBatch({
      runId,
      records,
      trackSeen: this.cursor.trackSeen,
      checkpoint,
      counts,
    });
    this.lastCommit = this.ctx.clock.now();
    Object.assign(counts, withTally(counts, result.tally));
    logQuarantined(this.ctx, this.resource.name, this.resource.table, result);
    this.run.onProgress?.(counts);
  }

  /**
   * Commits what is held when the scan stops on an error that is not a commit's: the pages before
   * it were read whole and admitted, so the next run resumes after them. A failure of this commit
   * is left to the next run; the error the scan stopped on is the one reported.
   */
  async settle(): Promise<void> {
    try {
      await this.flush();
    } catch (err) {
      this.ctx.log.warn(
        { event: 'sync.held.dropped', resource: this.resource.name, error: (err as Error).message },
        'records held for the next commit were dropped; the next run reads them again',
      );
    }
  }
}

/** One line per quarantined record, and one per change of the records' shape the batch found. */
export function logQuarantined(ctx: AppContext, resource: string, table: string, result: BatchResult): void {
  for (const { key, reason } of result.quarantined) {
    ctx.log.warn({ event: 'sync.record.quarantined', resource, table, key, reason }, 'record quarantined');
  }
  logSchemaChanges(ctx.log, result.schemaChanges);
}
