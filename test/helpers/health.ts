import type { Config } from '../../src/config/config.js';
import { type Health, judgeHealth, snapshotWindow } from '../../src/health/readHealth.js';
import { snapshotScript } from '../../src/health/snapshotReads.js';
import { driveSqlite } from '../../src/sqlite/commitQueue.js';
import { sqliteSnapshotEdge } from '../../src/sqlite/health.js';
import type { Sqlite } from '../../src/sqlite/open.js';

/**
 * Health of a SQLite file judged synchronously, for tests that assert a problem right after a write
 * (status.ts's readHealth, minus the await): the same statements in one read transaction, the same
 * rules. No daemon record is read: the identity's uptime is unknown.
 */
export function getHealth(sqlite: Sqlite, config: Config, now: number): Health {
  const edge = sqliteSnapshotEdge(sqlite);
  const script = snapshotScript(snapshotWindow(config, now), config.sync.page_size, edge);
  const read = sqlite.transaction(() => driveSqlite(sqlite, script))();
  return judgeHealth(read, config, edge.store, now, null);
}
