/**
 * Keeps the WAL from growing without bound while a worker thread checkpoints it (thread/workerSide.ts)
 * and the main connection's automatic checkpoints are off. A PASSIVE checkpoint never waits for a
 * writer, so under a steady stream of commits it never catches up: frames land while it copies,
 * the log is never wholly copied back, and SQLite restarts the WAL only once it is. Measured: 295 MiB
 * of WAL after ten seconds of webhooks, and every read slower for it (each page looked up through
 * the WAL's index), against 4 MiB when the writing connection checkpoints itself.
 *
 * So: PASSIVE first, which copies nearly everything without holding anyone up; then, when the log
 * is still past the bound, FULL, which holds writers off only while it copies the few frames that
 * came in meanwhile and syncs the file, after which the next commit starts the WAL from the top.
 */
import type { Sqlite } from './open.js';

/** A WAL past this many MiB is brought back (default bound: `database.wal_bound_mib`). */
export const WAL_BOUND_MIB = 64;

interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

/**
 * One round: returns the log's frames after PASSIVE and whether FULL ran. Blocks this thread for a
 * FULL (it waits for a writer through the connection's busy timeout): only for a worker thread.
 * Each FULL holds the other connections' commits off while it copies and syncs (tens of ms on a
 * busy disk: an enqueue waits that long), so the bound is set to make it rare: a full sync writes
 * several MiB of WAL a second.
 */
export function boundWal(sqlite: Sqlite, boundMib = WAL_BOUND_MIB): { frames: number; full: boolean } {
  const [passive] = sqlite.pragma('wal_checkpoint(PASSIVE)') as CheckpointResult[];
  const frames = passive?.log ?? 0;
  const pageSize = sqlite.pragma('page_size', { simple: true }) as number;
  if (frames * pageSize <= boundMib * 1024 * 1024) return { frames, full: false };
  sqlite.pragma('wal_checkpoint(FULL)');
  return { frames, full: true };
}
