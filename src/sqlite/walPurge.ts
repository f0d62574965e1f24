import type { Sqlite } from './open.js';
import { perHandle } from './perHandle.js';

/**
 * After the retention scrub, the WAL still holds the scrubbed rows as they were: each commit appends
 * whole pages to it, and a checkpoint copies them into the database file without erasing them from
 * the log (later commits overwrite the log from its start, the tail stays). A TRUNCATE checkpoint
 * copies every frame back and cuts the log to zero bytes. It needs a moment with no commit under way
 * and no reader on an older snapshot, so it is tried without waiting (a reader may keep its snapshot
 * for long, and the worker thread that tries it also sends): owed until it succeeds, and tried again
 * at each checkpoint round (thread/workerSide.ts) and each scrub.
 */

const purge = perHandle(() => ({ owed: false }));

/** Marks the WAL as holding scrubbed data, then tries to empty it now. Returns whether it did. */
export function purgeWalAfterScrub(sqlite: Sqlite): boolean {
  purge(sqlite).owed = true;
  return purgeWalIfOwed(sqlite);
}

/** Whether an emptying of the WAL is owed on this connection. */
export function walPurgeOwed(sqlite: Sqlite): boolean {
  return purge(sqlite).owed;
}

/**
 * Empties the WAL if a scrub left data in it; true when nothing is owed any more. Never waits on a
 * lock: busy now means tried again later.
 */
export function purgeWalIfOwed(sqlite: Sqlite): boolean {
  const state = purge(sqlite);
  if (!state.owed) return true;
  const busyTimeout = sqlite.pragma('busy_timeout', { simple: true }) as number;
  sqlite.pragma('busy_timeout = 0');
  try {
    const [result] = sqlite.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
    state.owed = (result?.busy ?? 0) !== 0;
  } catch {
    // SQLITE_BUSY from a writer mid-commit, or a fault the writers report: still owed.
  } finally {
    sqlite.pragma(`busy_timeout = ${busyTimeout}`);
  }
  return !state.owed;
}
