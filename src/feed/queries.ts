import type { Statement } from 'better-sqlite3';
import type { Sqlite } from '../db/open.js';
import { perHandle } from '../db/perHandle.js';

/** Reads of the change feed: strictly `seq > after`, in seq order, from the database. */

/** A change as stored (the `changes` table, either store). */
export interface StoredChange {
  seq: number;
  resource: string;
  record_id: string;
  kind: string;
  at: string;
}

/** A change feed entry as served: `record_id` is the deprecated alias of `recordId` (src/fieldAliases.ts). */
export interface FeedEntry {
  seq: number;
  resource: string;
  recordId: string;
  record_id: string;
  kind: string;
  at: string;
}

/** The change feed entries' fields shown under both names. */
export const CHANGE_ALIASES = ['record_id'] as const;

/**
 * A stored change as served, on either store: built once per read, which the feed's readers share
 * with its encoding (./pageCache.ts), so the twin costs no more per reader. Written out rather than
 * through fieldAliases.ts `withCamelTwins`: this is the feed's hot path.
 */
export function toChange(row: StoredChange): FeedEntry {
  return {
    seq: row.seq,
    resource: row.resource,
    recordId: row.record_id,
    record_id: row.record_id,
    kind: row.kind,
    at: row.at,
  };
}

/** Which entries: after a seq, at most `limit`, optionally of one resource. */
export interface FeedQuery {
  after: number;
  limit: number;
  resource?: string | undefined;
}

const COLUMNS = 'SELECT seq, resource, record_id, kind, at FROM changes';

const statements = perHandle((sqlite: Sqlite) => ({
  all: sqlite.prepare(`${COLUMNS} WHERE seq > ? ORDER BY seq LIMIT ?`) as Statement<
    [number, number],
    StoredChange
  >,
  // Walks the primary key in seq order and filters: with an index on (resource, record_id) a
  // resource's rows are not in seq order, and the feed is read near its head.
  ofResource: sqlite.prepare(`${COLUMNS} WHERE seq > ? AND resource = ? ORDER BY seq LIMIT ?`) as Statement<
    [number, string, number],
    StoredChange
  >,
  head: sqlite.prepare('SELECT coalesce(max(seq), 0) FROM changes').pluck() as Statement<[], number>,
}));

/** The entries after `q.after`, oldest first. */
export function readFeed(sqlite: Sqlite, q: FeedQuery): FeedEntry[] {
  const st = statements(sqlite);
  const rows =
    q.resource === undefined ? st.all.all(q.after, q.limit) : st.ofResource.all(q.after, q.resource, q.limit);
  return rows.map(toChange);
}

/** The newest seq in the feed (0 when empty). */
export function feedHead(sqlite: Sqlite): number {
  return statements(sqlite).head.get() ?? 0;
}
