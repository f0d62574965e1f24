import type pg from 'pg';
import { iso } from '../operations/pgRows.js';
import { depthTimes, type Series } from './series.js';

/**
 * The status page's charts from PostgreSQL: the same points as series.ts reads from SQLite (the
 * last day's sync durations, the queue's depth at each hour's end, the last ten webhooks), each
 * in one query.
 */
export async function readSeriesPg(pool: pg.Pool, now: number): Promise<Series> {
  const since = new Date(now - 24 * 3_600_000).toISOString();
  const durations = await pool.query<Series['syncDurations'][number]>(
    `SELECT resource, ${iso('finished_at')} AS at, status,
            greatest(0, round(extract(epoch FROM finished_at - started_at), 3))::float8 AS seconds
       FROM sync_runs WHERE finished_at >= $1 ORDER BY finished_at LIMIT 2000`,
    [since],
  );
  // Depth at time t: created by t and neither accepted nor finished by t, as on SQLite.
  const times = depthTimes(now);
  const depths = await pool.query<{ depth: number }>(
    `SELECT (SELECT count(*)::int FROM outbox WHERE created_at <= t
               AND (accepted_at IS NULL OR accepted_at > t) AND (finished_at IS NULL OR finished_at > t)) AS depth
       FROM unnest($1::timestamptz[]) WITH ORDINALITY AS p(t, n) ORDER BY n`,
    [times],
  );
  const webhooks = await pool.query<Series['recentWebhooks'][number]>(
    `SELECT ${iso('received_at')} AS at, event_type AS type, "marketplaceTransactionRef" AS ref, outcome
       FROM webhook_events ORDER BY id DESC LIMIT 10`,
  );
  return {
    syncDurations: durations.rows,
    queueDepth: times.map((at, i) => ({ at, depth: depths.rows[i]?.depth ?? 0 })),
    recentWebhooks: webhooks.rows,
  };
}
