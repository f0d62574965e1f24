import type pg from 'pg';
import { isoAt } from '../../clock.js';
import type { AppContext, SyncTarget } from '../../context.js';
import type { Logger } from '../../log.js';
import type { MirrorBackend, RunAcquire } from '../backend.js';
import { readCheckpointState } from '../scan/checkpoint.js';
import { pgCustodyIds } from './pgCustodyIds.js';
import { pgMirrorSql } from './pgMirrorSql.js';
import { COUNT_COLUMNS } from './pgRunsSql.js';
import { pgStore } from './pgStore.js';
import { RunLockLost } from './runLockLost.js';

/**
 * The mirror's backend on PostgreSQL, shared by any number of replicas. One run of a resource at a
 * time across all of them: a run holds a session advisory lock named after its resource, on a
 * connection of its own, from before its `sync_runs` row starts until after it finishes. A replica
 * that dies drops its connection and so the lock: a live replica's sweep (interruptOrphanedRuns),
 * or the next schedule on any replica, marks the dead run's row (still `running`, its lock free)
 * `interrupted`.
 */

/** The advisory lock key of a resource's runs (64-bit, from its name), given the SQL expression of the name. */
const lockKey = (resource: string) => `hashtextextended('vcu-sync sync ' || ${resource}, 0)`;
/** The key of the resource bound as $1. */
const LOCK_KEY = lockKey('$1');

const INTERRUPTED = 'the replica running it ended before it finished';

export function pgBackend(pool: pg.Pool): MirrorBackend {
  return {
    custodyIds: pgCustodyIds(pool),
    store: (def, now, lease) => pgStore(pool, def, now, lease?.holderPid),
    acquireRun: (ctx, target) => acquireRun(pool, ctx, target),
    async checkpoint(resource) {
      const { rows } = await pool.query<{
        resource: string;
        run_id: string;
        mode: string;
        next_offset: string;
        scan_started_at: Date;
        state: string | null;
      }>('SELECT * FROM sync_checkpoints WHERE resource = $1', [resource]);
      const row = rows[0];
      if (!row) return undefined;
      return {
        resource: row.resource,
        runId: Number(row.run_id),
        mode: row.mode === 'incremental' ? 'incremental' : 'full',
        nextOffset: Number(row.next_offset),
        scanStartedAt: new Date(row.scan_started_at).toISOString(),
        state: readCheckpointState(row.state),
      };
    },
    async liveCount(def) {
      const { rows } = await pool.query<{ n: string }>(pgMirrorSql(def).liveCount);
      return Number(rows[0]?.n ?? 0);
    },
    async startRun(target, mode, trigger, at, resumedFrom) {
      const { rows } = await pool.query<{ id: string }>(
        `INSERT INTO sync_runs (resource, mode, trigger, started_at, status, resumed_from, pid)
         VALUES ($1, $2, $3, $4, 'running', $5, $6) RETURNING id`,
        [target, mode, trigger, at, resumedFrom, process.pid],
      );
      return Number(rows[0]!.id);
    },
    async setRunMode(runId, mode) {
      await pool.query('UPDATE sync_runs SET mode = $1 WHERE id = $2', [mode, runId]);
    },
    async finishRun(runId, at, status, error, counts) {
      // Only a row still running: one another replica marked interrupted (this one lost its lock)
      // keeps what that replica wrote.
      await pool.query(
        `UPDATE sync_runs SET finished_at = $2, status = $3, error = $4, ${COUNT_COLUMNS.map((c, i) => `${c} = $${i + 5}`).join(', ')}
         WHERE id = $1 AND status = 'running'`,
        [runId, at, status, error, ...COUNT_COLUMNS.map((c) => counts[c])],
      );
    },
    lockFailure: () => false,
    afterSuccess: () => {},
  };
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
  const { rows } = await pool.query<{ id: string; resource: string; pid: number | null }>(
    `UPDATE sync_runs SET status = 'interrupted', finished_at = $1, error = $2
     WHERE CASE WHEN status = 'running' THEN pg_try_advisory_xact_lock(${lockKey('resource')}) ELSE false END
     RETURNING id, resource, pid`,
    [nowIso, INTERRUPTED],
  );
  logInterrupted(log, rows);
  return rows.length;
}

/** One warning per run marked interrupted because its replica died. */
function logInterrupted(
  log: Logger,
  runs: ReadonlyArray<{ id: string; resource: string; pid: number | null }>,
): void {
  for (const run of runs)
    log.warn(
      { event: 'sync.run.interrupted', runId: Number(run.id), resource: run.resource, pid: run.pid },
      'marked a run that died as interrupted',
    );
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
  let locked = false;
  let holderPid = 0;
  try {
    const { rows } = await client.query<{ locked: boolean; pid: number }>(
      `SELECT pg_try_advisory_lock(${LOCK_KEY}) AS locked, pg_backend_pid() AS pid`,
      [target],
    );
    locked = rows[0]?.locked === true;
    holderPid = rows[0]?.pid ?? 0;
    if (!locked) {
      return {
        ok: false,
        error: `${target}: another replica is already syncing it`,
        fields: {},
      };
    }
    // Holding the lock, no replica runs this resource: a row still `running` is a dead replica's.
    const dead = await client.query<{ id: string; resource: string; pid: number | null }>(
      `UPDATE sync_runs SET status = 'interrupted', finished_at = $1, error = $2
       WHERE resource = $3 AND status = 'running' RETURNING id, resource, pid`,
      [isoAt(ctx.clock.now()), INTERRUPTED, target],
    );
    logInterrupted(ctx.log, dead.rows);
  } catch (err) {
    if (locked) await client.query(`SELECT pg_advisory_unlock(${LOCK_KEY})`, [target]).catch(() => {});
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
      holderPid,
      async release() {
        try {
          if (!broken) await client.query(`SELECT pg_advisory_unlock(${LOCK_KEY})`, [target]);
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
