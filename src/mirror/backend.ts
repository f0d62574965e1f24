import type { AppContext } from '../context.js';
import { all, run, type Script } from '../store/script.js';
import type { SyncTarget } from '../syncRequests.js';
import type { RunCounts } from './bookkeeping.js';
import { type CustodyIdBook, custodyIdBook } from './custody.js';
import type { TableDef } from './resources.js';
import { type Checkpoint, readCheckpointState } from './scan/checkpoint.js';
import * as statements from './statements.js';
import { type MirrorDb, type MirrorStore, mirrorStore } from './store.js';

/** A run's right to go: held from before its `sync_runs` row starts until after it finishes. */
export interface RunLease {
  /** Aborts when the right is lost mid-run (PostgreSQL: the connection holding the lock died). */
  lost?: AbortSignal;
  /** Run first in each write of the run: throws once the right is lost (a fence). */
  fence?: () => Script<void>;
  release(): Promise<void>;
}

/** Whether a run may go now; when not, why (a run of the same resource is live elsewhere). */
export type RunAcquire =
  | { ok: true; lease: RunLease }
  | { ok: false; error: string; fields: Record<string, unknown> };

/**
 * One run of a resource at a time, as the database allows it: SQLite's single owner (./sqlite.ts,
 * dead runs known by their pid) or PostgreSQL's advisory lock shared by replicas (./postgres.ts).
 */
export interface RunLock {
  /** Marks dead runs `interrupted`, then takes the resource's run right (or says who has it). */
  acquire(ctx: AppContext, target: SyncTarget): Promise<RunAcquire>;
  /** A run's row was started under the lease just acquired (default: nothing). */
  started?(runId: number): void;
  /** Whether a run failed on another process's lock and should go again at once. */
  lockFailure(err: unknown): boolean;
  /** After a successful run (SQLite: planner statistics); never throws. */
  afterSuccess(ctx: AppContext): void;
}

/**
 * What `runSync` needs of a database: the mirror's store, the run's bookkeeping, and the right to
 * run one resource at a time. {@link mirrorBackend} is the one implementation; ./sqlite.ts and
 * ./postgres.ts make it for their database.
 */
export interface MirrorBackend {
  /** The store of a table; with the run's lease, its writes refuse to commit once the lease is lost. */
  store(def: TableDef, now: () => string, lease?: RunLease): MirrorStore;
  /** Marks dead runs `interrupted`, then takes the resource's run right (or says who has it). */
  acquireRun(ctx: AppContext, target: SyncTarget): Promise<RunAcquire>;
  checkpoint(resource: string): Promise<Checkpoint | undefined>;
  /** Live rows of a mirror table (a run's record cap follows the mirror's size). */
  liveCount(def: TableDef): Promise<number>;
  startRun(
    target: SyncTarget,
    mode: string,
    trigger: string,
    at: string,
    resumedFrom: number | null,
  ): Promise<number>;
  setRunMode(runId: number, mode: string): Promise<void>;
  finishRun(
    runId: number,
    at: string,
    status: string,
    error: string | null,
    counts: RunCounts,
  ): Promise<void>;
  /** Whether a run failed on another process's lock and should go again at once (default: never). */
  lockFailure(err: unknown): boolean;
  /** After a successful run (SQLite: planner statistics); never throws. */
  afterSuccess(ctx: AppContext): void;
  /** `custody_ids`, on the same database as the outbox their ids come from. */
  readonly custodyIds: CustodyIdBook;
}

/** The mirror's backend on `db`, its runs one at a time per resource by `lock`. */
export function mirrorBackend(db: MirrorDb, lock: RunLock): MirrorBackend {
  return {
    custodyIds: custodyIdBook(db),
    store: (def, now, lease) => mirrorStore(db, def, now, lease?.fence),
    acquireRun: (ctx, target) => lock.acquire(ctx, target),
    async checkpoint(resource) {
      const [row] = await db.read<statements.CheckpointRow>(statements.readCheckpoint(resource));
      if (!row) return undefined;
      return {
        resource: row.resource,
        runId: Number(row.run_id),
        mode: row.mode === 'incremental' ? 'incremental' : 'full',
        nextOffset: Number(row.next_offset),
        scanStartedAt: row.scan_started_at,
        state: readCheckpointState(row.state),
      };
    },
    async liveCount(def) {
      return Number((await db.read<{ n: number }>(statements.liveCount(def)))[0]?.n ?? 0);
    },
    async startRun(target, mode, trigger, at, resumedFrom) {
      const rows = await db.write(
        all<{ id: number }>(statements.startRun(target, mode, trigger, at, resumedFrom)),
      );
      const runId = Number(rows[0]!.id);
      lock.started?.(runId);
      return runId;
    },
    async setRunMode(runId, mode) {
      await db.write(run(statements.setRunMode(runId, mode)));
    },
    async finishRun(runId, at, status, error, counts) {
      await db.write(run(statements.finishRun(runId, at, status, error, counts)));
    },
    lockFailure: (err) => lock.lockFailure(err),
    afterSuccess: (ctx) => lock.afterSuccess(ctx),
  };
}
