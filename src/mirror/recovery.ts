import { isoAt } from '../clock.js';
import type { AppContext } from '../context.js';
import { pidAlive } from '../db/ownership.js';
import { bookkeeping } from './bookkeeping.js';

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
  const book = bookkeeping(ctx.database.sqlite);
  const interrupted: number[] = [];
  const liveElsewhere: { id: number; resource: string; pid: number }[] = [];
  for (const row of book.runningRuns()) {
    const owns = activeRuns.has(runKey(ctx, row.id));
    const alive = row.pid !== null && row.pid !== process.pid && pidAlive(row.pid);
    if (isDeadRun(row.pid, alive, process.pid, owns)) {
      const at = isoAt(ctx.clock.now());
      if (book.interruptRun(row.id, at, 'the process running it ended before it finished')) {
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
