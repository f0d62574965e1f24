import { isoAt } from '../common/clock.js';
import { run, type Script, type ScriptStore } from '../store/script.js';
import { limitRows, raw, sql, typed, valueList } from '../store/sql.js';

/**
 * Deliveries do not grow without end: a row that is over (delivered, or dead and not sent again)
 * is deleted `subscriber_delivery.retention_days` after it ended, and the pending rows of a
 * subscriber no longer in the config (renamed or removed: no lane will ever send them) the same
 * time after they were written. Until then they stay, listed by `vcu-sync deliveries list` under
 * their old name (a subscriber given its old name back sends them, in order), and each prune run
 * names such subscribers in its log. Rows being sent (`sending`) and the unsettled rows of a
 * configured subscriber are never pruned: the dispatcher dead-letters those after their max age.
 *
 * Run after the outbox's scrub (housekeeping.ts, handed to the dispatcher by the root), in
 * batches: rows are read oldest first a batch at a time (a read holds no write lock), the pure
 * {@link prunable} picks those to delete, and each batch is deleted in one short transaction whose
 * guard checks again what the read saw (a dead row sent again in between stays). Ids follow
 * creation, so the walk stops at the first row written after the cutoff: a run reads only rows
 * older than the retention, nearly all of them deleted.
 *
 * Replicas sharing a store and pruning at once delete each row once (a row already gone is not
 * counted again); their configs should name the same subscribers (one replica's orphan is another's
 * live subscriber otherwise, and its pending rows older than the retention would go).
 */

/** Rows read (and at most deleted) per batch, on both stores. */
export const PRUNE_BATCH = 500;

/** A delivery as the prune reads it. */
export interface PruneCandidate {
  id: number;
  subscriber: string;
  state: string;
  created_at: string;
  delivered_at: string | null;
  dead_at: string | null;
}

/** What one prune is about: rows ended (or, orphaned, written) before `cutoff` (ISO). */
export interface PrunePolicy {
  cutoff: string;
  /** The subscribers in the config now (their keys): any other's pending rows are orphaned. */
  configured: readonly string[];
}

/** Rows deleted by one prune, by why, and the orphaned subscribers whose rows are still kept. */
export interface PruneResult {
  delivered: number;
  dead: number;
  /** Pending rows of subscribers no longer configured, written before the cutoff. */
  orphaned: number;
  /** Subscribers not in the config that still have unsettled rows, with how many (none pruned yet). */
  orphans: Array<{ subscriber: string; unsettled: number }>;
}

/** The oldest end a prune at `nowMs` keeps (ISO): rows that ended `retentionDays` ago or more go. */
export function pruneCutoff(nowMs: number, retentionDays: number): string {
  return isoAt(nowMs - retentionDays * 86_400_000);
}

/** Why a row is deleted, or null when it stays (pure). */
export function prunable(row: PruneCandidate, p: PrunePolicy): 'delivered' | 'dead' | 'orphaned' | null {
  if (row.state === 'delivered')
    return row.delivered_at !== null && row.delivered_at < p.cutoff ? 'delivered' : null;
  if (row.state === 'dead') return row.dead_at !== null && row.dead_at < p.cutoff ? 'dead' : null;
  if (row.state === 'pending' && !p.configured.includes(row.subscriber))
    return row.created_at < p.cutoff ? 'orphaned' : null;
  return null;
}

/** One batch's decision: the ids to delete, and whether the walk is over (pure). */
export function pruneBatch(
  rows: readonly PruneCandidate[],
  p: PrunePolicy,
): { ids: number[]; done: boolean } {
  const ids: number[] = [];
  for (const row of rows) {
    // Written after the cutoff: it, and every later row, ended after it too.
    if (row.created_at >= p.cutoff) return { ids, done: true };
    if (prunable(row, p) !== null) ids.push(row.id);
  }
  return { ids, done: rows.length < PRUNE_BATCH };
}

/** Adds the states of deleted rows to `into`: a pending one was an orphan's (pure but for `into`). */
export function countDeleted(into: PruneResult, states: readonly string[]): void {
  for (const state of states) {
    if (state === 'delivered') into.delivered++;
    else if (state === 'dead') into.dead++;
    else into.orphaned++;
  }
}

/** Orphaned subscribers from per-subscriber unsettled counts (pure). */
export function orphansOf(
  unsettled: ReadonlyArray<{ subscriber: string; n: number }>,
  configured: readonly string[],
): PruneResult['orphans'] {
  return unsettled
    .filter((u) => !configured.includes(u.subscriber))
    .map((u) => ({ subscriber: u.subscriber, unsettled: u.n }));
}

/** One store's prune: deliveries over for `retentionDays`, and orphans' rows that old. */
export type DeliveriesPrune = (
  nowMs: number,
  retentionDays: number,
  configured: readonly string[],
) => Promise<PruneResult>;

/** Deletes the batch's rows that the guard ({@link prunable} in SQL) still finds prunable: their states. */
function* deleteBatch(ids: readonly number[], p: PrunePolicy): Script<string[]> {
  const cutoff = typed(p.cutoff, 'timestamptz');
  const notConfigured =
    p.configured.length === 0 ? raw('1 = 1') : sql`subscriber NOT IN (${valueList(p.configured)})`;
  const { rows } = yield* run(sql`
    DELETE FROM deliveries WHERE id IN (${valueList(ids)})
      AND ((state = 'delivered' AND delivered_at < ${cutoff}) OR (state = 'dead' AND dead_at < ${cutoff})
        OR (state = 'pending' AND ${notConfigured} AND created_at < ${cutoff}))
    RETURNING state`);
  return rows.map((r) => String(r.state));
}

/** The prune of either store (see the top of this file): a read and a short transaction per batch. */
export function deliveriesPrune(store: ScriptStore): DeliveriesPrune {
  return async (nowMs, retentionDays, configured) => {
    const policy: PrunePolicy = { cutoff: pruneCutoff(nowMs, retentionDays), configured };
    const result: PruneResult = { delivered: 0, dead: 0, orphaned: 0, orphans: [] };
    for (let after = 0; ; ) {
      const rows = await store.read<PruneCandidate>(sql`
        SELECT id, subscriber, state, created_at, delivered_at, dead_at FROM deliveries
        WHERE id > ${after} ORDER BY id ${limitRows(PRUNE_BATCH)}`);
      const batch = pruneBatch(rows, policy);
      if (batch.ids.length > 0) countDeleted(result, await store.transaction(deleteBatch(batch.ids, policy)));
      if (batch.done) break;
      after = rows.at(-1)!.id;
    }
    const unsettled = await store.read<{ subscriber: string; n: number }>(
      sql`SELECT subscriber, count(*) AS n FROM deliveries WHERE state IN ('pending', 'sending') GROUP BY subscriber`,
    );
    result.orphans = orphansOf(unsettled, configured);
    return result;
  };
}
