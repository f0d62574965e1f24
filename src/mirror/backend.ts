import type { AppContext, SyncTarget } from '../context.js';
import { classifyDatabaseError } from '../db/faults.js';
import { refreshPlannerStats } from '../db/plannerStats.js';
import { whenUnlocked } from '../db/whenUnlocked.js';
import { errorMessage } from '../errors.js';
import { bookkeeping, type RunCounts } from './bookkeeping.js';
import { type CustodyIdBook, sqliteCustodyIds } from './custody.js';
import { mirrorTable } from './mirrorTable.js';
import { markActive, markInactive, markInterruptedRuns } from './recovery.js';
import type { TableDef } from './resources.js';
import type { Checkpoint } from './scan/checkpoint.js';
import { type MirrorStore, sqliteStore } from './store.js';

/** A run's right to go: held from before its `sync_runs` row starts until after it finishes. */
export interface RunLease {
  /** Aborts when the right is lost mid-run (PostgreSQL: the connection holding the lock died). */
  lost?: AbortSignal;
  /** PostgreSQL: the server process holding the lock, checked by each write (a fence). */
  holderPid?: number;
  release(): Promise<void>;
}

/** Whether a run may go now; when not, why (a run of the same resource is live elsewhere). */
export type RunAcquire =
  | { ok: true; lease: RunLease }
  | { ok: false; error: string; fields: Record<string, unknown> };

/**
 * What `runSync` needs of a database: the mirror's store, the run's bookkeeping, and the right to
 * run one resource at a time. SQLite's (below) is the embedded default; PostgreSQL's is
 * ./pg/pgBackend.ts.
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

/**
 * SQLite's backend: `ctx.database`, one process per file. Its bookkeeping waits out another
 * process's lock without blocking the loop (`signal` stops the wait).
 */
export function sqliteBackend(ctx: AppContext, signal?: AbortSignal): MirrorBackend {
  const { sqlite } = ctx.database;
  const book = bookkeeping(sqlite);
  const unlocked = <T>(work: () => T) => whenUnlocked(sqlite, work, signal);
  const active = new Set<number>();
  return {
    custodyIds: sqliteCustodyIds(sqlite),
    store: (def, now) => sqliteStore(sqlite, def, now),
    async acquireRun(_ctx, target) {
      const { liveElsewhere } = await unlocked(() => markInterruptedRuns(ctx));
      const busy = liveElsewhere.find((r) => r.resource === target);
      if (!busy) {
        return {
          ok: true,
          lease: {
            async release() {
              for (const runId of active) markInactive(ctx, runId);
              active.clear();
            },
          },
        };
      }
      return {
        ok: false,
        error: `${target}: another process (pid ${busy.pid}) is already syncing it (run ${busy.id})`,
        fields: { pid: busy.pid },
      };
    },
    checkpoint: async (resource) => book.checkpoint(resource),
    liveCount: async (def) => mirrorTable(sqlite, def).liveCount(),
    async startRun(target, mode, trigger, at, resumedFrom) {
      const runId = await unlocked(() => book.startRun(target, mode, trigger, at, resumedFrom));
      markActive(ctx, runId);
      active.add(runId);
      return runId;
    },
    setRunMode: async (runId, mode) => book.setRunMode(runId, mode),
    async finishRun(runId, at, status, error, counts) {
      await unlocked(() => book.finishRun(runId, at, status, error, counts));
    },
    lockFailure: (err) => classifyDatabaseError(err) === 'busy',
    afterSuccess(c) {
      // Planner statistics follow the mirror's size; a failure here only costs speed.
      try {
        refreshPlannerStats(c.database.sqlite);
      } catch (err) {
        c.log.warn(
          { event: 'sync.stats.failed', error: errorMessage(err) },
          'planner statistics not refreshed',
        );
      }
    },
  };
}
