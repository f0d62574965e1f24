import type { AppContext } from '../context.js';
import { errorMessage } from '../errors.js';
import { type MirrorBackend, mirrorBackend, type RunLock } from '../mirror/backend.js';
import { markActive, markInactive, markInterruptedRuns } from '../mirror/recovery.js';
import type { TableDef } from '../mirror/resources.js';
import { type MirrorDb, type MirrorStore, mirrorStore } from '../mirror/store.js';
import type { Script } from '../store/script.js';
import { driveSqlite } from './commitQueue.js';
import { classifyDatabaseError } from './faults.js';
import type { Sqlite } from './open.js';
import { refreshPlannerStats } from './plannerStats.js';
import { runSqlite, sqliteDialect } from './scripts.js';
import { commitThenSync, WalSync } from './walSync.js';
import { whenUnlocked } from './whenUnlocked.js';
import * as writerGate from './writerGate.js';

/**
 * The mirror on SQLite: one process owns the file, so a run's right is the absence of a live run
 * of the resource in another process (recovery.ts); the sync writes from a worker thread, in large
 * batches that stand aside for the API's enqueue (sqlite/writerGate.ts).
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
 * (sqlite/walSync.ts). Bookkeeping writes wait out another process's lock without blocking the loop
 * (`signal` stops the wait).
 */
export function sqliteMirrorDb(sqlite: Sqlite, signal?: AbortSignal): MirrorDb {
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

/** The SQLite store of one mirror table; `now` gives each transaction's ISO time. */
export function sqliteStore(sqlite: Sqlite, def: TableDef, now: () => string): MirrorStore {
  return mirrorStore(sqliteMirrorDb(sqlite), def, now);
}

/**
 * SQLite's run right: no run of the resource live in another process. Dead runs (their process
 * gone) are marked `interrupted` first; this process's runs are known alive while their lease is
 * held (so a reused pid is not mistaken for them).
 */
function sqliteRunLock(ctx: AppContext, signal?: AbortSignal): RunLock {
  const { sqlite } = ctx.database;
  const active = new Set<number>();
  return {
    async acquire(_ctx, target) {
      const { liveElsewhere } = await whenUnlocked(sqlite, () => markInterruptedRuns(ctx), signal);
      const busy = liveElsewhere.find((r) => r.resource === target);
      if (busy) {
        return {
          ok: false,
          error: `${target}: another process (pid ${busy.pid}) is already syncing it (run ${busy.id})`,
          fields: { pid: busy.pid },
        };
      }
      return {
        ok: true,
        lease: {
          async release() {
            for (const runId of active) markInactive(ctx, runId);
            active.clear();
          },
        },
      };
    },
    started(runId) {
      markActive(ctx, runId);
      active.add(runId);
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

/** SQLite's backend: `ctx.database`, one process per file. */
export function sqliteBackend(ctx: AppContext, signal?: AbortSignal): MirrorBackend {
  return mirrorBackend(sqliteMirrorDb(ctx.database.sqlite, signal), sqliteRunLock(ctx, signal));
}
