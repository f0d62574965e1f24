import type { Sqlite } from '../db/open.js';

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

/** The charts' points from a SQLite database (PostgreSQL's: pgSeries.ts). */
export function readSeries(sqlite: Sqlite, now: number): Series {
  const since = new Date(now - 24 * 3_600_000).toISOString();
  const syncDurations = sqlite
    .prepare(
      `SELECT resource, finished_at AS at, status,
              max(0, round((julianday(finished_at) - julianday(started_at)) * 86400.0, 3)) AS seconds
       FROM sync_runs WHERE finished_at >= ? ORDER BY finished_at LIMIT 2000`,
    )
    .all(since) as Series['syncDurations'];
  // Depth at time t: created by t and neither accepted nor finished by t. No sampling table needed.
  const depthAt = sqlite.prepare(
    `SELECT count(*) FROM outbox WHERE created_at <= @t
       AND (accepted_at IS NULL OR accepted_at > @t) AND (finished_at IS NULL OR finished_at > @t)`,
  );
  const queueDepth = depthTimes(now).map((t) => ({ at: t, depth: depthAt.pluck().get({ t }) as number }));
  const recentWebhooks = sqlite
    .prepare(
      `SELECT received_at AS at, event_type AS type, marketplaceTransactionRef AS ref, outcome
       FROM webhook_events ORDER BY id DESC LIMIT 10`,
    )
    .all() as Series['recentWebhooks'];
  return { syncDurations, queueDepth, recentWebhooks };
}
