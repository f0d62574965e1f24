import type pg from 'pg';
import { iso } from '../operations/pgRows.js';
import {
  countDeleted,
  orphansOf,
  PRUNE_BATCH,
  type PruneCandidate,
  type PrunePolicy,
  type PruneResult,
  pruneBatch,
  pruneCutoff,
  pruneGuard,
} from './prune.js';

/**
 * The deliveries prune (prune.ts) on PostgreSQL: the same walk, decision and guard; each batch's
 * delete one statement. Replicas pruning at once delete each row once (a row already gone is not
 * counted again); their configs should name the same subscribers (one replica's orphan is another's
 * live subscriber otherwise, and its pending rows older than the retention would go).
 */
export async function pruneDeliveriesPg(
  pool: pg.Pool,
  nowMs: number,
  retentionDays: number,
  configured: readonly string[],
): Promise<PruneResult> {
  const policy: PrunePolicy = { cutoff: pruneCutoff(nowMs, retentionDays), configured };
  const guard = pruneGuard('$2::timestamptz', 'NOT (subscriber = ANY($3::text[]))');
  const result: PruneResult = { delivered: 0, dead: 0, orphaned: 0, orphans: [] };
  for (let after = 0; ; ) {
    const { rows } = await pool.query<PruneCandidate>(
      `SELECT id::float8 AS id, subscriber, state, ${iso('created_at')} AS created_at,
         ${iso('delivered_at')} AS delivered_at, ${iso('dead_at')} AS dead_at
       FROM deliveries WHERE id > $1 ORDER BY id LIMIT ${PRUNE_BATCH}`,
      [after],
    );
    const batch = pruneBatch(rows, policy);
    if (batch.ids.length > 0) {
      const deleted = await pool.query<{ state: string }>(
        `DELETE FROM deliveries WHERE id = ANY($1::bigint[]) AND ${guard} RETURNING state`,
        [batch.ids, policy.cutoff, configured],
      );
      countDeleted(
        result,
        deleted.rows.map((r) => r.state),
      );
    }
    if (batch.done) break;
    after = rows.at(-1)!.id;
  }
  const unsettled = await pool.query<{ subscriber: string; n: number }>(
    `SELECT subscriber, count(*)::int AS n FROM deliveries WHERE state IN ('pending', 'sending') GROUP BY subscriber`,
  );
  result.orphans = orphansOf(unsettled.rows, configured);
  return result;
}
