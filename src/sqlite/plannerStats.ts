import type { Sqlite } from './open.js';

/**
 * Keeps SQLite's planner statistics (sqlite_stat1) in step with the mirror's size. Without them the
 * planner takes the index of any equality over the one that gives the list's order: `status=Held`
 * on a 3M-row mirror then sorts a sixth of the table for one page (seconds instead of a
 * millisecond), and `issuance` with `status` reads by status. `PRAGMA optimize` analyzes only
 * tables never analyzed or whose size changed about 25-fold since, sampling each index
 * (`analysis_limit`), so after a sync that changed little it costs next to nothing.
 */
export function refreshPlannerStats(sqlite: Sqlite): void {
  sqlite.pragma('analysis_limit = 1000');
  // 0x10000: every table, not only those this connection has queried; 0x02: analyze what needs it.
  sqlite.pragma('optimize = 0x10002');
}
