import type pg from 'pg';
import type { ChangeSignal } from '../db/changeSignal.js';
import { type FeedEntry, type FeedQuery, type StoredChange, toChange } from './queries.js';
import type { FeedReads } from './reads.js';

/**
 * Reads of the change feed on PostgreSQL, the same answers as ./queries.ts gives on SQLite:
 * strictly `seq > after`, in seq order. `seq` is bigint (text from pg) and `at` timestamptz: both
 * are turned back into what the API serves (a number, an ISO string in UTC with milliseconds).
 */

const COLUMNS = `SELECT seq::float8 AS seq, resource, record_id, kind,
  to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at FROM changes`;

/** The entries after `q.after`, oldest first. */
export async function readFeedPg(pool: pg.Pool, q: FeedQuery): Promise<FeedEntry[]> {
  const result =
    q.resource === undefined
      ? await pool.query<StoredChange>(`${COLUMNS} WHERE seq > $1 ORDER BY seq LIMIT $2`, [q.after, q.limit])
      : await pool.query<StoredChange>(`${COLUMNS} WHERE seq > $1 AND resource = $2 ORDER BY seq LIMIT $3`, [
          q.after,
          q.resource,
          q.limit,
        ]);
  return result.rows.map(toChange);
}

/** The newest seq in the feed (0 when empty). */
export async function feedHeadPg(pool: pg.Pool): Promise<number> {
  const result = await pool.query<{ head: number }>(
    'SELECT coalesce(max(seq), 0)::float8 AS head FROM changes',
  );
  return result.rows[0]?.head ?? 0;
}

/**
 * The feed's reads on PostgreSQL for the API's routes, woken by `signal`, which this process's
 * LISTEN feeds (db/pgChangeSignal.ts `listenForChanges`: every replica's commits announce on it).
 * Readers asking the same question share one query in flight (./pageCache.ts, above this seam).
 */
export function pgFeedReads(pool: pg.Pool, signal: ChangeSignal): FeedReads {
  return {
    signal,
    read: (q) => readFeedPg(pool, q),
    head: () => feedHeadPg(pool),
  };
}
