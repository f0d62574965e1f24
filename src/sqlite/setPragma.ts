import type { Sqlite } from './open.js';
import { perHandle } from './perHandle.js';

/** Each handle's `PRAGMA x = N` statements, by assignment. */
const assignmentsOf = perHandle(() => new Map<string, { run(): unknown }>());

/**
 * Sets a pragma on `sqlite` through a statement prepared once per handle and assignment: one
 * prepared on every use cost ~2 % of an enqueue (the group commit sets three around each group).
 * SQLite applies such a pragma when the statement is prepared, and the statement's first run after
 * that does nothing (seen on better-sqlite3 13: `prepare(N)`, `prepare(F)`, `run(N)` leaves F);
 * later runs apply it. So a new statement is prepared and run at once, and every later use is a
 * working run.
 */
export function setPragma(sqlite: Sqlite, assignment: string): void {
  const prepared = assignmentsOf(sqlite);
  let statement = prepared.get(assignment);
  if (!statement) {
    statement = sqlite.prepare(`PRAGMA ${assignment}`);
    prepared.set(assignment, statement);
  }
  statement.run();
}
