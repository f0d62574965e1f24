import { isoAt } from '../clock.js';
import type { Sqlite } from '../db/open.js';
import { outboxQueries } from './queries.js';

/** What replaces a personal field in a stored body once scrubbed. */
export const SCRUBBED = '[scrubbed]';

/**
 * Replaces the personal fields of rows that reached a final state (approved, rejected, failed,
 * cancelled) at least `afterDays` ago, and stamps `scrubbed_at`. `body_hash` is left alone, so a
 * repeated enqueue of the original input still answers 200. Returns the number of rows scrubbed.
 */
export function scrubFinishedRows(sqlite: Sqlite, nowMs: number, afterDays: number): number {
  const cutoff = isoAt(nowMs - afterDays * 86_400_000);
  return outboxQueries(sqlite).scrub.run({ mask: SCRUBBED, now: isoAt(nowMs), cutoff }).changes;
}
