import type { ScriptStore } from '../store/script.js';
import { join, sql, typed } from '../store/sql.js';

/** Points for the status page's charts over the last day, derived from rows already kept. */
export interface Series {
  /** Finished sync runs: resource, when, seconds taken, status. */
  syncDurations: Array<{ resource: string; at: string; seconds: number; status: string }>;
  /** Unsent outbox rows (queued or sending) at the end of each hour. */
  queueDepth: Array<{ at: string; depth: number }>;
  /** Recent webhook events. */
  recentWebhooks: Array<{ at: string; type: string | null; ref: string | null; outcome: string }>;
}

/** The times the queue-depth chart is drawn at (ISO): each hour's end over the last day, then now. Pure. */
export function depthTimes(now: number): string[] {
  const hour = 3_600_000;
  const times: string[] = [];
  for (let end = Math.ceil((now - 23 * hour) / hour) * hour; end <= now + hour; end += hour) {
    times.push(new Date(Math.min(end, now)).toISOString());
  }
  return times;
}

/** Seconds from `started` to `finished` (ISO), to the ms, never below 0. Pure. */
export function secondsBetween(started: string, finished: string): number {
  return Math.max(0, Math.round(Date.parse(finished) - Date.parse(started)) / 1000);
}

/** The charts' points, each read in one statement. */
export async function readSeries(store: ScriptStore, now: number): Promise<Series> {
  const since = new Date(now - 24 * 3_600_000).toISOString();
  const runs = await store.read<{ resource: string; at: string; started: string; status: string }>(
    sql`SELECT resource, finished_at AS at, started_at AS started, status
          FROM sync_runs WHERE finished_at >= ${since} ORDER BY finished_at LIMIT 2000`,
  );
  // Depth at time t: created by t and neither accepted nor finished by t. No sampling table needed.
  // The times are a VALUES list (columns column1, column2 on both stores), the order kept by n.
  const times = depthTimes(now);
  const points = join(
    times.map((t, n) => sql`(${typed(n, 'int4')}, ${typed(t, 'timestamptz')})`),
    ', ',
  );
  const depths = await store.read<{ depth: number }>(
    sql`SELECT (SELECT count(*) FROM outbox WHERE created_at <= p.column2
                  AND (accepted_at IS NULL OR accepted_at > p.column2)
                  AND (finished_at IS NULL OR finished_at > p.column2)) AS depth
          FROM (VALUES ${points}) AS p ORDER BY p.column1`,
  );
  const recentWebhooks = await store.read<Series['recentWebhooks'][number]>(
    sql`SELECT received_at AS at, event_type AS type, "marketplaceTransactionRef" AS ref, outcome
          FROM webhook_events ORDER BY id DESC LIMIT 10`,
  );
  return {
    syncDurations: runs.map((r) => ({
      resource: r.resource,
      at: r.at,
      status: r.status,
      seconds: secondsBetween(r.started, r.at),
    })),
    queueDepth: times.map((at, i) => ({ at, depth: depths[i]?.depth ?? 0 })),
    recentWebhooks,
  };
}
