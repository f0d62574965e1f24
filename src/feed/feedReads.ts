import type { ChangeSignal } from '../db/changeSignal.js';
import type { ScriptStore } from '../store/script.js';
import { limitRows, type Sql, sql } from '../store/sql.js';

/**
 * Reads of the change feed: strictly `seq > after`, in seq order, each statement written once for
 * both stores.
 */

/** A change as stored (the `changes` table, either store). */
export interface StoredChange {
  seq: number;
  resource: string;
  record_id: string;
  kind: string;
  at: string;
}

/** A change feed entry as served: `record_id` is the deprecated alias of `recordId` (src/common/fieldAliases.ts). */
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

/**
 * The entries after `q.after`, oldest first. With a resource it walks the primary key in seq order
 * and filters: with an index on (resource, record_id) a resource's rows are not in seq order, and
 * the feed is read near its head.
 */
export function feedPage(q: FeedQuery): Sql {
  const ofResource = q.resource === undefined ? sql`` : sql` AND resource = ${q.resource}`;
  return sql`SELECT seq, resource, record_id, kind, at FROM changes
    WHERE seq > ${q.after}${ofResource} ORDER BY seq ${limitRows(q.limit)}`;
}

/** The newest seq in the feed (0 when empty). */
export const FEED_HEAD: Sql = sql`SELECT coalesce(max(seq), 0) AS head FROM changes`;

/**
 * What the feed's routes (long-poll, event stream) read, whatever the store: a page after a seq,
 * the head, and the {@link ChangeSignal} that says the feed grew, one statement each. SQLite's reads
 * (sqlite/feedReads.ts) run them synchronously and answer plain values (no promise, no extra tick on
 * the hot path); {@link feedReads} answers promises. Callers `await` either. The routes share these
 * reads between their readers above this seam (./pageCache.ts).
 */
export interface FeedReads {
  /** Announced after each commit that appended to the feed (on PostgreSQL, by LISTEN/NOTIFY). */
  readonly signal: ChangeSignal;
  /** The entries after `q.after`, oldest first, read now. */
  read(q: FeedQuery): FeedEntry[] | Promise<FeedEntry[]>;
  /** The newest seq in the feed (0 when empty). */
  head(): number | Promise<number>;
}

/**
 * The feed's reads through a store, woken by `signal` (on PostgreSQL this process's LISTEN feeds
 * it, postgres/changeListener.ts `listenForChanges`: every replica's commits announce on it).
 */
export function feedReads(store: ScriptStore, signal: ChangeSignal): FeedReads {
  return {
    signal,
    read: async (q) => (await store.read<StoredChange>(feedPage(q))).map(toChange),
    head: async () => Number((await store.read<{ head: number }>(FEED_HEAD))[0]?.head ?? 0),
  };
}
