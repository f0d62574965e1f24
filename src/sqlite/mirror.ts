import { isoAt } from '../common/clock.js';
import { errorMessage } from '../common/errors.js';
import type { AppContext } from '../context.js';
import { logInterrupted, type MirrorBackend, mirrorBackend, type RunLock } from '../mirror/backend.js';
import type { SchemaChangeSink } from '../mirror/shape/tracker.js';
import { interruptRuns, type RunningRow, runningRuns } from '../mirror/statements.js';
import type { MirrorDb } from '../mirror/store.js';
import type { Script } from '../store/script.js';
import { sql } from '../store/sql.js';
import { driveSqlite } from './commitQueue.js';
import { classifyDatabaseError } from './faults.js';
import type { Sqlite } from './open.js';
import { pidAlive } from './ownership.js';
import { runSqlite, sqliteDialect } from './scripts.js';
import { commitThenSync, WalSync } from './walSync.js';
import { whenUnlocked } from './whenUnlocked.js';
import * as writerGate from './writerGate.js';

/**
 * The mirror on SQLite: one process owns the file, so a run's right is the absence of a live run
 * of the resource in another process (dead runs known by their pid); the sync writes from a worker
 * thread, in large batches that stand aside for the API's enqueue (./writerGate.ts).
 */

/**
 * Records written between looks at the writer gate: ~1 ms of unit operations under their indexes,
 * so a waiting enqueue gets the lock within about that.
 */
const YIELD_EVERY = 32;
/** Longest a bulk writer stands aside for a waiting one, ms (it goes on after that regardless). */
const YIELD_WAIT_MAX_MS = 20;

/**
 * SQLite's database for the mirror's writes. Each transaction takes the lock first (IMMEDIATE): a
 * deferred read-then-write fails at once when another connection (the dispatcher's thread) holds
 * it, instead of waiting its busy timeout. Its fsync runs after its COMMIT, out of the write lock
 * (./walSync.ts). Bookkeeping writes wait out another process's lock without blocking the loop
 * (`signal` stops the wait).
 */
function sqliteMirrorDb(sqlite: Sqlite, signal?: AbortSignal): MirrorDb {
  const walSync = WalSync.for(sqlite);
  const drive = sqlite.transaction((script: Script<unknown>) => driveSqlite(sqlite, script));
  const immediate = <T>(script: Script<T>) => drive.immediate(script) as T;
  return {
    dialect: sqliteDialect,
    transaction: (script) => commitThenSync(sqlite, walSync, () => immediate(script)),
    write: (script) => whenUnlocked(sqlite, () => immediate(script), signal),
    read: async <R extends object>(statement: Parameters<typeof runSqlite>[1]) =>
      runSqlite(sqlite, statement).rows as R[],
    holdsNul: true,
    preparesStatements: true,
    standAside: {
      every: YIELD_EVERY,
      requested: writerGate.yieldRequested,
      wait: () => writerGate.waitTurn(YIELD_WAIT_MAX_MS),
    },
  };
}

/**
 * Keeps SQLite's planner statistics (sqlite_stat1) in step with the mirror's size. Without them the
 * planner takes the index of any equality over the one that gives the list's order: `status=Held`
 * on a 3M-row mirror then sorts a sixth of the table for one page (seconds instead of a
 * millisecond), and `issuance` with `status` reads by status. `PRAGMA optimize` analyzes only
 * tables never analyzed or whose size changed about 25-fold since, sampling each index
 * (`analysis_limit`), so after a sync that changed little it costs next to nothing.
 */
function refreshPlannerStats(sqlite: Sqlite): void {
  sqlite.pragma('analysis_limit = 1000');
  // 0x10000: every table, not only those this connection has queried; 0x02: analyze what needs it.
  sqlite.pragma('optimize = 0x10002');
}

/** Runs in progress in this process, by database file and run id, so a reused pid is not mistaken for them. */
const activeRuns = new Set<string>();

const runKey = (sqlite: Sqlite, runId: number) => `${sqlite.name}#${runId}`;

/**
 * Whether a `running` row is dead (pure given its inputs): no pid, a pid that is gone, or this
 * process's pid without a run of ours behind it (a restarted container reuses pid 1).
 */
export function isDeadRun(pid: number | null, alive: boolean, ownPid: number, ownsIt: boolean): boolean {
  if (pid === null) return true;
  if (pid === ownPid) return !ownsIt;
  return !alive;
}

/** Marks every `running` row whose process died as `interrupted`; returns the rows still live elsewhere. */
export function markInterruptedRuns(
  ctx: Pick<AppContext, 'clock' | 'log'>,
  sqlite: Sqlite,
): { interrupted: number[]; liveElsewhere: RunningRow[] } {
  const interrupted: RunningRow[] = [];
  const liveElsewhere: RunningRow[] = [];
  for (const row of runSqlite(sqlite, runningRuns()).rows as unknown as RunningRow[]) {
    const owns = activeRuns.has(runKey(sqlite, row.id));
    const alive = row.pid !== null && row.pid !== process.pid && pidAlive(row.pid);
    if (isDeadRun(row.pid, alive, process.pid, owns)) {
      const which = sql`id = ${row.id} AND status = 'running'`;
      const reason = 'the process running it ended before it finished';
      const marked = runSqlite(sqlite, interruptRuns(isoAt(ctx.clock.now()), reason, which));
      interrupted.push(...(marked.rows as unknown as RunningRow[]));
    } else if (row.pid !== null && row.pid !== process.pid) {
      liveElsewhere.push(row);
    }
  }
  logInterrupted(ctx.log, interrupted);
  return { interrupted: interrupted.map((r) => r.id), liveElsewhere };
}

/**
 * SQLite's run right: no run of the resource live in another process. Dead runs (their process
 * gone) are marked `interrupted` first; this process's runs are known alive while their lease is
 * held (so a reused pid is not mistaken for them).
 */
function sqliteRunLock(sqlite: Sqlite, signal?: AbortSignal): RunLock {
  return {
    async acquire(ctx, target) {
      const { liveElsewhere } = await whenUnlocked(sqlite, () => markInterruptedRuns(ctx, sqlite), signal);
      const busy = liveElsewhere.find((r) => r.resource === target);
      if (busy) {
        return {
          ok: false,
          error: `${target}: another process (pid ${busy.pid}) is already syncing it (run ${busy.id})`,
          fields: { pid: busy.pid },
        };
      }
      let active: string | undefined;
      return {
        ok: true,
        lease: {
          started(runId) {
            active = runKey(sqlite, runId);
            activeRuns.add(active);
          },
          async release() {
            if (active !== undefined) activeRuns.delete(active);
          },
        },
      };
    },
    lockFailure: (err) => classifyDatabaseError(err) === 'busy',
    afterSuccess(ctx) {
      // Planner statistics follow the mirror's size; a failure here only costs speed.
      try {
        refreshPlannerStats(sqlite);
      } catch (err) {
        ctx.log.warn(
          { event: 'sync.stats.failed', error: errorMessage(err) },
          'planner statistics not refreshed',
        );
      }
    },
    recover: (ctx) => void markInterruptedRuns(ctx, sqlite),
  };
}

/**
 * SQLite's backend on `sqlite`, one process per file; `signal` stops its waits for another
 * process's lock; `onSchemaChange` is the root's sink for changes of the records' shape.
 */
export function sqliteBackend(
  sqlite: Sqlite,
  signal?: AbortSignal,
  onSchemaChange?: SchemaChangeSink,
): MirrorBackend {
  return mirrorBackend(sqliteMirrorDb(sqlite, signal), sqliteRunLock(sqlite, signal), onSchemaChange);
}
