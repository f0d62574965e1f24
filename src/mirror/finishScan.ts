import { isoAt } from '../clock.js';
import type { AppContext } from '../context.js';
import { type RunCounts, syncQueries } from './queries.js';
import type { ListResource } from './resources.js';
import { idleCheckpoint, type ScanState } from './scanState.js';
import { tableQueries } from './tableQueries.js';

/** The run a finished scan belongs to. */
export interface ScanRun {
  runId: number;
  counts: RunCounts;
}

/**
 * After a complete full scan: tombstones (guarded), then the checkpoint, in one transaction.
 * Returns the refusal when more than `sync.max_remove_share` of the live rows went unseen.
 */
export function finishScan(
  ctx: AppContext,
  resource: ListResource,
  run: ScanRun,
  state: ScanState,
): string | null {
  const { sqlite } = ctx.database;
  const table = tableQueries(sqlite, resource);
  const sync = syncQueries(sqlite);
  const share = ctx.config.sync.max_remove_share;
  let refusal: string | null = null;
  const writeTx = sqlite.transaction(() => {
    const at = isoAt(ctx.clock.now());
    if (state.trackSeen && (state.drifted || state.incomplete !== null)) {
      ctx.log.warn(
        { event: 'sync.remove.skipped', resource: resource.target, runId: run.runId },
        `${state.incomplete ?? 'records moved during the scan'}; removals wait for the next complete scan`,
      );
      sync.clearSeen(resource.table);
    } else if (state.trackSeen) {
      const unseen = table.unseenCount();
      const live = unseen > 0 ? table.liveCount() : 0;
      if (unseen > 0 && unseen > share * live) {
        refusal =
          `refused to mark ${unseen} of ${live} ${resource.target} removed (more than sync.max_remove_share=${share}); ` +
          'the mirror keeps them';
      } else if (unseen > 0) {
        for (const key of table.tombstoneUnseen(at)) {
          sync.addChange(resource.table, key, 'remove', at);
          run.counts.removed++;
        }
      }
      sync.clearSeen(resource.table);
    }
    const idle = idleCheckpoint(resource, run.runId, state);
    if (idle) sync.putCheckpoint(idle, at);
    else sync.deleteCheckpoint(resource.target);
    sync.progress(run.runId, run.counts);
  });
  // IMMEDIATE: the write lock first; a deferred read-then-write fails at once on another connection's lock.
  writeTx.immediate();
  if (refusal) {
    ctx.log.error({ event: 'sync.remove.refused', resource: resource.target, runId: run.runId }, refusal);
  }
  return refusal;
}
