import type pg from 'pg';
import { isoAt } from '../common/clock.js';
import type { Logger } from '../common/log.js';
import type { SyncTarget } from '../common/syncRequests.js';
import type { AppContext } from '../context.js';
import {
  logInterrupted,
  type MirrorBackend,
  mirrorBackend,
  type RunAcquire,
  type RunLock,
} from '../mirror/backend.js';
import type { SchemaChangeSink } from '../mirror/shape/tracker.js';
import { interruptRuns, type RunningRow } from '../mirror/statements.js';
import type { MirrorDb } from '../mirror/store.js';
import { first, type Script } from '../store/script.js';
import { join, raw, type Sql, sql, typed } from '../store/sql.js';
import { syncRunLock } from './advisoryLocks.js';
import { postgresScriptStore, runPostgres } from './scripts.js';

/**
 * The mirror on PostgreSQL, shared by any number of replicas. One run of a resource at a time
 * across all of them: a run holds a session advisory lock named after its resource, on a
 * connection of its own, from before its `sync_runs` row starts until after it finishes. A replica
 * that dies drops its connection and so the lock: a live replica's sweep (interruptOrphanedRuns),
 * or the next schedule on any replica, marks the dead run's row (still `running`, its lock free)
 * `interrupted`. Every write of a run is fenced by its lock.
 */

/** A run lost its advisory lock: the connection holding it ended (the lost-lock signal's reason, the fence's error). */
export class RunLockLost extends Error {
  constructor() {
    super('the database connection holding the run lock ended; the next run resumes from the checkpoint');
    this.name = 'RunLockLost';
  }
}

const INTERRUPTED = 'the replica running it ended before it finished';

/**
 * PostgreSQL's database for the mirror's writes. Each page commits as it is read: a commit here
 * costs a round trip, not an fsync and a WAL checkpoint, and while a transaction of ten pages runs
 * the one page read ahead waits with it (1,000-record commits: 0.84x of the bare loop on 300,000
 * units; 10,000-record: 0.44-0.62x).
 */
function postgresMirrorDb(pool: pg.Pool): MirrorDb {
  const store = postgresScriptStore(pool);
  return {
    dialect: store.dialect,
    transaction: (script) => store.transaction(script),
    write: (script) => store.transaction(script),
    read: (statement) => store.read(statement),
    heldRecords: 0,
    rowsSource: unnestRows,
    // jsonb and text cannot hold U+0000, which JSON may escape.
    holdsNul: false,
    preparesStatements: false,
  };
}

/** Rows as one array per column (`unnest($1::text[], $2::int8[], ...)`): a few parameters to parse, whatever the rows. */
function unnestRows(types: readonly string[], values: readonly unknown[]): Sql {
  const columns: unknown[][] = types.map(() => []);
  for (let i = 0; i < values.length; i++) columns[i % types.length]!.push(values[i]);
  return sql`SELECT * FROM unnest(${join(
    columns.map((column, i) => sql`${column}::${raw(types[i]!)}[]`),
    ', ',
  )})`;
}

/**
 * The fence: a run whose lock connection died (so another replica may hold the lock now) must not
 * commit. Checked inside each write's transaction, before its writes.
 */
function* fence(holderPid: number): Script<void> {
  const row = yield* first<{ held: boolean }>(
    sql`SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = ${holderPid}) AS held`,
  );
  if (row?.held !== true) throw new RunLockLost();
}

/**
 * Marks `interrupted` every run still `running` whose resource's run lock nobody holds: its replica
 * died. The presence's sweep calls it (seconds after the death) so status stops reporting a dead
 * run once a survivor has seen it, instead of until that resource's next schedule (a day, for a
 * daily one). Each row's lock is tried for the statement's transaction only: a run starting
 * meanwhile takes it first, or waits for this commit and finds its row already settled. CASE keeps
 * the lock tried on running rows only (the planner may order plain AND terms as it likes; a lock
 * taken for a finished run would make a replica starting that resource skip its run). Returns the
 * runs marked.
 */
export async function interruptOrphanedRuns(pool: pg.Pool, log: Logger, nowIso: string): Promise<number> {
  const which = sql`CASE WHEN status = 'running' THEN pg_try_advisory_xact_lock(${raw(syncRunLock('resource'))}) ELSE false END`;
  const { rows } = await runPostgres(pool, interruptRuns(nowIso, INTERRUPTED, which));
  logInterrupted(log, rows as unknown as RunningRow[]);
  return rows.length;
}

/** Takes the resource's run lock on a connection of its own, then marks its dead runs. */
async function acquireRun(pool: pg.Pool, ctx: AppContext, target: SyncTarget): Promise<RunAcquire> {
  const client = await pool.connect();
  const lost = new AbortController();
  let broken: Error | undefined;
  const onError = (err: Error) => {
    broken = err;
    lost.abort(new RunLockLost());
  };
  client.on('error', onError);
  // The key derived from the bound resource exactly as health derives it from the column.
  const ofTarget = sql`FROM (SELECT ${typed(target, 'text')} AS resource) AS run`;
  const unlock = sql`SELECT pg_advisory_unlock(${raw(syncRunLock('run.resource'))}) ${ofTarget}`;
  let locked = false;
  let holderPid = 0;
  try {
    const { rows } = await runPostgres(
      client,
      sql`SELECT pg_try_advisory_lock(${raw(syncRunLock('run.resource'))}) AS locked, pg_backend_pid() AS pid ${ofTarget}`,
    );
    locked = rows[0]?.locked === true;
    holderPid = Number(rows[0]?.pid ?? 0);
    if (!locked) return { ok: false, error: `${target}: another replica is already syncing it`, fields: {} };
    // Holding the lock, no replica runs this resource: a row still `running` is a dead replica's.
    const which = sql`resource = ${target} AND status = 'running'`;
    const dead = await runPostgres(client, interruptRuns(isoAt(ctx.clock.now()), INTERRUPTED, which));
    logInterrupted(ctx.log, dead.rows as unknown as RunningRow[]);
  } catch (err) {
    if (locked) await runPostgres(client, unlock).catch(() => {});
    locked = false;
    throw err;
  } finally {
    if (!locked) {
      client.off('error', onError);
      client.release(broken ?? false);
    }
  }
  return {
    ok: true,
    lease: {
      lost: lost.signal,
      fence: () => fence(holderPid),
      async release() {
        try {
          if (!broken) await runPostgres(client, unlock);
        } catch (err) {
          broken = err as Error;
        } finally {
          client.off('error', onError);
          // A broken connection is dropped from the pool rather than handed out again.
          client.release(broken ?? false);
        }
      },
    },
  };
}

/** PostgreSQL's run right: the resource's advisory lock. */
const advisoryRunLock = (pool: pg.Pool): RunLock => ({
  acquire: (ctx, target) => acquireRun(pool, ctx, target),
  lockFailure: () => false,
  afterSuccess: () => {},
});

/** The mirror's backend on PostgreSQL; `onSchemaChange` is the root's sink for changes of the records' shape. */
export function pgBackend(pool: pg.Pool, onSchemaChange?: SchemaChangeSink): MirrorBackend {
  return mirrorBackend(postgresMirrorDb(pool), advisoryRunLock(pool), onSchemaChange);
}
