import type { Statement } from 'better-sqlite3';
import type { Sqlite } from '../db/open.js';
import { perHandle } from '../db/perHandle.js';

/** Reads of the change feed: strictly `seq > after`, in seq order, from the database. */

/** A change feed entry as served. */
export interface FeedEntry {
  seq: number;
  resource: string;
  record_id: string;
  kind: string;
  at: string;
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
    FeedEntry
  >,
  // Walks the primary key in seq order and filters: with an index on (resource, record_id) a
  // resource's rows are not in seq order, and the feed is read near its head.
  ofResource: sqlite.prepare(`${COLUMNS} WHERE seq > ? AND resource = ? ORDER BY seq LIMIT ?`) as Statement<
    [number, string, number],
    FeedEntry
  >,
  head: sqlite.prepare('SELECT coalesce(max(seq), 0) FROM changes').pluck() as Statement<[], number>,
}));

/** The entries after `q.after`, oldest first. */
export function readFeed(sqlite: Sqlite, q: FeedQuery): FeedEntry[] {
  const st = statements(sqlite);
  return q.resource === undefined
    ? st.all.all(q.after, q.limit)
    : st.ofResource.all(q.after, q.resource, q.limit);
}

/** The newest seq in the feed (0 when empty). */
export function feedHead(sqlite: Sqlite): number {
  return statements(sqlite).head.get() ?? 0;
}
