import type { Sqlite } from '../db/open.js';
import { commitThenSync, WalSync } from '../db/walSync.js';
import * as writerGate from '../db/writerGate.js';
import { type Bookkeeping, bookkeeping, type RunCounts, type WriteTally, withTally } from './bookkeeping.js';
import { type MirrorTable, mirrorTable } from './mirrorTable.js';
import type { TableDef } from './resources.js';
import type { Checkpoint } from './scan/checkpoint.js';
import { removalRefusal, type ScanPlan, type StartFacts, type TombstoneVerdict } from './scan/cursor.js';
import { type FetchedRecord, RecordWriter } from './writer.js';

/** One batch to commit: its records, the checkpoint that goes with them, the run's counts so far. */
export interface BatchWrite {
  runId: number;
  records: readonly FetchedRecord[];
  /** Record keys in `sync_seen` (a full scan that may tombstone). */
  trackSeen: boolean;
  /** Committed with the records (null: none, e.g. a custody read). */
  checkpoint: Checkpoint | null;
  /** The run's counts before this batch; saved with the batch's tally added. */
  counts: RunCounts;
}

/** What a batch did: its tally by outcome, and each quarantined record (to log). */
export interface BatchResult {
  tally: WriteTally;
  quarantined: { key: string | null; reason: string }[];
}

/** The end of a full scan: tombstones as the verdict allows, then the idle checkpoint. */
export interface ScanFinish {
  runId: number;
  /** The resource, as its checkpoint is named. */
  resource: string;
  verdict: TombstoneVerdict;
  /** `sync.max_remove_share`. */
  maxRemoveShare: number;
  /** Left for the next run (null: the checkpoint is deleted). */
  checkpoint: Checkpoint | null;
  counts: RunCounts;
}

/**
 * The writes of the mirror, at batch granularity: each call is one transaction (records, their
 * `changes` rows and seen keys, the checkpoint and the run's counts together). The driver awaits
 * every call, so a store whose transactions are asynchronous (PostgreSQL) can stand behind the
 * same calls; this one is SQLite's, synchronous inside.
 */
export interface MirrorStore {
  /** What a scan starts from; a scan that starts afresh clears the seen set first. */
  startScan(plan: ScanPlan, now: string): Promise<StartFacts>;
  commitBatch(batch: BatchWrite): Promise<BatchResult>;
  putCheckpoint(checkpoint: Checkpoint): Promise<void>;
  finishScan(finish: ScanFinish): Promise<{ removed: number; refusal: string | null }>;
  /** A custody read answered 404: the id leaves custody; true when a row was in custody. */
  endCustody(runId: number, kind: string, id: string, counts: RunCounts): Promise<boolean>;
  /**
   * How many records of pages read whole a scan may hold before it commits them (default:
   * scan/heldWrites.ts HELD_RECORDS, what SQLite's fsync and WAL checkpoint call for).
   */
  readonly heldRecords?: number;
}

const NO_TALLY: WriteTally = { inserted: 0, updated: 0, unchanged: 0, quarantined: 0, removed: 0 };

/** The SQLite store of one mirror table; `now` gives each transaction's ISO time. */
export function sqliteStore(sqlite: Sqlite, def: TableDef, now: () => string): MirrorStore {
  const table = mirrorTable(sqlite, def);
  const book = bookkeeping(sqlite);
  // Each transaction's fsync runs after its COMMIT, out of the write lock (db/walSync.ts).
  const walSync = WalSync.for(sqlite);
  // Writes the batch's records from `from` on; ends early (returning where it stopped) when another
  // writer of this process waits for the lock, so the batch's checkpoint and progress commit only
  // with its last records.
  const commit = sqlite.transaction((batch: BatchWrite, from: number, sum: BatchResult): number => {
    const at = now();
    const next = writeRecords(table, book, batch, from, at, sum);
    if (next < batch.records.length) return next;
    if (batch.checkpoint) book.putCheckpoint(batch.checkpoint, at);
    book.progress(batch.runId, withTally(batch.counts, sum.tally));
    return next;
  });
  const finish = sqlite.transaction((f: ScanFinish) => {
    const at = now();
    let removed = 0;
    let refusal: string | null = null;
    if (f.verdict.kind === 'guarded') {
      const unseen = table.unseenCount();
      refusal = removalRefusal(f.resource, unseen, unseen > 0 ? table.liveCount() : 0, f.maxRemoveShare);
      if (refusal === null && unseen > 0) {
        for (const key of table.tombstoneUnseen(at)) {
          book.addChange(def.table, key, 'remove', at);
          removed++;
        }
      }
    }
    if (f.verdict.kind !== 'no-seen-set') book.clearSeen(def.table);
    if (f.checkpoint) book.putCheckpoint(f.checkpoint, at);
    else book.deleteCheckpoint(f.resource);
    book.progress(f.runId, withTally(f.counts, { removed }));
    return { removed, refusal };
  });
  const endCustody = sqlite.transaction((runId: number, kind: string, id: string, counts: RunCounts) => {
    const at = now();
    book.endCustodyId(kind, id, at);
    const ended = table.endCustody(id, at);
    if (ended) book.addChange(def.table, id, 'remove', at);
    book.progress(runId, withTally(counts, { removed: ended ? 1 : 0 }));
    return ended;
  });
  // Every write takes the lock first (IMMEDIATE): a deferred read-then-write fails at once when
  // another connection (the dispatcher's thread) holds it, instead of waiting its busy timeout.
  return {
    async startScan(plan, at) {
      const hasLive = plan.trackSeen === null ? table.hasLive() : false;
      // A fresh scan decides its seen set now: whatever an earlier, unfinished one left is stale.
      if (plan.trackSeen === null) book.clearSeen(def.table);
      return {
        now: at,
        hasLive,
        overlapRows: plan.window ? table.overlapRows(plan.window.start, plan.window.known) : [],
        logStartKey: plan.window ? (table.overlapRows(0, 1)[0]?.key ?? null) : null,
      };
    },
    async commitBatch(batch) {
      const sum: BatchResult = { tally: { ...NO_TALLY }, quarantined: [] };
      for (let from = 0; ; ) {
        const start = from;
        from = await commitThenSync(sqlite, walSync, () => commit.immediate(batch, start, sum));
        if (from >= batch.records.length) return sum;
        // Committed part of the batch for a waiting writer (the API's enqueue): let it take the lock.
        writerGate.waitTurn(YIELD_WAIT_MAX_MS);
      }
    },
    async putCheckpoint(checkpoint) {
      book.putCheckpoint(checkpoint, now());
    },
    async finishScan(f) {
      return commitThenSync(sqlite, walSync, () => finish.immediate(f));
    },
    async endCustody(runId, kind, id, counts) {
      return commitThenSync(sqlite, walSync, () => endCustody.immediate(runId, kind, id, counts));
    },
  };
}

/**
 * Records written between looks at the writer gate: ~1 ms of unit operations under their indexes,
 * so a waiting enqueue gets the lock within about that.
 */
const YIELD_EVERY = 32;
/** Longest a bulk writer stands aside for a waiting one, ms (it goes on after that regardless). */
const YIELD_WAIT_MAX_MS = 20;

/**
 * Applies a batch's records from `from` on (inside the caller's transaction), adding what they did
 * to `sum`; returns the index after the last record written: short of the end when another writer
 * waits for the lock (writerGate.ts) and at least {@link YIELD_EVERY} records were written.
 */
function writeRecords(
  table: MirrorTable,
  book: Bookkeeping,
  batch: BatchWrite,
  from: number,
  at: string,
  sum: BatchResult,
): number {
  const writer = new RecordWriter(table, book, batch.runId, batch.trackSeen);
  const { tally, quarantined } = sum;
  const { records } = batch;
  for (let i = from; i < records.length; i++) {
    if ((i - from) % YIELD_EVERY === YIELD_EVERY - 1 && writerGate.yieldRequested()) return i;
    const outcome = writer.apply(records[i]!, at);
    switch (outcome.kind) {
      case 'repeat':
        break;
      case 'quarantined':
        tally.quarantined++;
        quarantined.push({ key: outcome.key, reason: outcome.reason });
        break;
      default:
        tally[outcome.kind]++;
    }
  }
  return records.length;
}
