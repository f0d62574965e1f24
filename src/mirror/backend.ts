import type { Logger } from '../common/log.js';
import type { SyncTarget } from '../common/syncRequests.js';
import type { AppContext } from '../context.js';
import { all, type Script } from '../store/script.js';
import type { TableDef } from './resources.js';
import { type Checkpoint, readCheckpointState } from './scan/checkpoint.js';
import type { ShapePolicy } from './shape/policy.js';
import { type SchemaChangeSink, ShapeTracker } from './shape/tracker.js';
import * as statements from './statements.js';
import { type MirrorDb, type MirrorStore, mirrorStore } from './store.js';

/** A run's right to go: held from before its `sync_runs` row starts until after it finishes. */
export interface RunLease {
  /** Aborts when the right is lost mid-run (PostgreSQL: the connection holding the lock died). */
  lost?: AbortSignal;
  /** Run first in each write of the run: throws once the right is lost (a fence). */
  fence?: () => Script<void>;
  /** The run's row was started under this lease (SQLite: the run is known alive while held). */
  started?(runId: number): void;
  release(): Promise<void>;
}

/** Whether a run may go now; when not, why (a run of the same resource is live elsewhere). */
export type RunAcquire =
  | { ok: true; lease: RunLease }
  | { ok: false; error: string; fields: Record<string, unknown> };

/**
 * One run of a resource at a time, as the database allows it: SQLite's single owner (dead runs
 * known by their pid) or PostgreSQL's advisory lock shared by replicas (the adapters' mirror.ts).
 */
export interface RunLock {
  /** Marks dead runs `interrupted`, then takes the resource's run right (or says who has it). */
  acquire(ctx: AppContext, target: SyncTarget): Promise<RunAcquire>;
  /** Whether a run failed on another process's lock and should go again at once. */
  lockFailure(err: unknown): boolean;
  /** After a successful run (SQLite: planner statistics); never throws. */
  afterSuccess(ctx: AppContext): void;
  /**
   * Marks the runs a dead process left `running` as interrupted, when the mirror starts (default:
   * nothing: each acquire finds them, and PostgreSQL's presence sweeps them).
   */
  recover?(ctx: AppContext): void;
}

/**
 * What `runSync` needs of a database: where the mirror's statements run, and the right to run one
 * resource at a time. Each adapter's mirror.ts makes it with {@link mirrorBackend}.
 */
export interface MirrorBackend {
  readonly db: MirrorDb;
  readonly lock: RunLock;
  /**
   * The store of a table; with the run's lease, its writes refuse to commit once the lease is lost;
   * with a shape policy, it learns the records' shape and applies the policy (shape/).
   */
  store(def: TableDef, now: () => string, lease?: RunLease, shape?: ShapePolicy): MirrorStore;
}

/**
 * The mirror's backend on `db`, its runs one at a time per resource by `lock`; `onSchemaChange` is
 * told of each new change of the records' shape in its transaction (the root's subscribers).
 */
export function mirrorBackend(db: MirrorDb, lock: RunLock, onSchemaChange?: SchemaChangeSink): MirrorBackend {
  return {
    db,
    lock,
    store: (def, now, lease, shape) =>
      mirrorStore(db, def, now, lease?.fence, shape && new ShapeTracker(def, shape, onSchemaChange)),
  };
}

/** The checkpoint a resource's last scan left, if any. */
export async function readCheckpoint(db: MirrorDb, resource: string): Promise<Checkpoint | undefined> {
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
}

/** Live rows of a mirror table (a run's record cap follows the mirror's size). */
export async function liveRows(db: MirrorDb, def: TableDef): Promise<number> {
  return Number((await db.read<{ n: number }>(statements.liveCount(def)))[0]?.n ?? 0);
}

/** A run's row, started `running`: its id. */
export async function startRun(
  db: MirrorDb,
  ...row: Parameters<typeof statements.startRun>
): Promise<number> {
  return Number((await db.write(all<{ id: number }>(statements.startRun(...row))))[0]!.id);
}

/** One warning per run marked interrupted because the process or replica running it died. */
export function logInterrupted(log: Logger, runs: readonly statements.RunningRow[]): void {
  for (const run of runs)
    log.warn(
      { event: 'sync.run.interrupted', runId: Number(run.id), resource: run.resource, pid: run.pid },
      'marked a run that died as interrupted',
    );
}
