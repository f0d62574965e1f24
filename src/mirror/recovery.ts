import { isoAt } from '../clock.js';
import type { AppContext } from '../context.js';
import { pidAlive } from '../sqlite/ownership.js';
import { runSqlite } from '../sqlite/scripts.js';
import { sql } from '../store/sql.js';
import { interruptRuns, type RunningRow, runningRuns } from './statements.js';

/** Runs in progress in this process, by database file and run id, so a reused pid is not mistaken for them. */
const activeRuns = new Set<string>();

const runKey = (ctx: AppContext, runId: number) => `${ctx.database.path}#${runId}`;

export function markActive(ctx: AppContext, runId: number): void {
  activeRuns.add(runKey(ctx, runId));
}

export function markInactive(ctx: AppContext, runId: number): void {
  activeRuns.delete(runKey(ctx, runId));
}

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
export function markInterruptedRuns(ctx: AppContext): {
  interrupted: number[];
  liveElsewhere: { id: number; resource: string; pid: number }[];
} {
  const { sqlite } = ctx.database;
  const interrupted: number[] = [];
  const liveElsewhere: { id: number; resource: string; pid: number }[] = [];
  for (const row of runSqlite(sqlite, runningRuns()).rows as unknown as RunningRow[]) {
    const owns = activeRuns.has(runKey(ctx, row.id));
    const alive = row.pid !== null && row.pid !== process.pid && pidAlive(row.pid);
    if (isDeadRun(row.pid, alive, process.pid, owns)) {
      const at = isoAt(ctx.clock.now());
      const which = sql`id = ${row.id} AND status = 'running'`;
      if (
        runSqlite(sqlite, interruptRuns(at, 'the process running it ended before it finished', which))
          .rowCount > 0
      ) {
        interrupted.push(row.id);
        ctx.log.warn(
          { event: 'sync.run.interrupted', runId: row.id, resource: row.resource, pid: row.pid },
          'marked a run that died as interrupted',
        );
      }
    } else if (row.pid !== null && row.pid !== process.pid) {
      liveElsewhere.push({ id: row.id, resource: row.resource, pid: row.pid });
    }
  }
  return { interrupted, liveElsewhere };
}
