import { stateChangeSinkOf } from '../sqlite/changes.js';
import { driveSqlite } from '../sqlite/commitQueue.js';
import type { Sqlite } from '../sqlite/open.js';
import type { OperationRow } from './rows.js';
import type { DecisionRecord, NewOperation, ScrubbedTexts } from './storeSeam.js';
import * as transitions from './transitions.js';

/**
 * The transitions (transitions.ts) run now on a SQLite handle, for the synchronous callers that
 * hold its transaction already (the API's grouped enqueue, start-up's hand-back, the scrub, the
 * inbox's correlation): each runs in whatever transaction the caller holds, its state changes
 * through the handle's sink.
 */

/** Queues an operation; undefined when its ref is queued already (nothing changes then). */
export function insertOperation(sqlite: Sqlite, op: NewOperation, nowIso: string): OperationRow | undefined {
  return driveSqlite(sqlite, transitions.insertOperations([op], nowIso, stateChangeSinkOf(sqlite)))[0];
}

/**
 * Hands back every claimed row, whoever claimed it (attempt not counted, lease cleared): only for
 * a process that knows every claimant is dead (the daemon that owns a SQLite file, at start-up).
 */
export function releaseAllClaims(sqlite: Sqlite, nowIso: string): Array<{ id: number; ref: string }> {
  return driveSqlite(sqlite, transitions.releaseOwnedBy(null, nowIso, stateChangeSinkOf(sqlite)));
}

/** The operator's decision on an accepted row; false when the row is not accepted (nothing changes). */
export function recordDecision(sqlite: Sqlite, d: DecisionRecord): boolean {
  return driveSqlite(sqlite, transitions.decide(d, stateChangeSinkOf(sqlite)));
}

/** Stores the scrubbed texts of a batch of rows and stamps `scrubbed_at`; returns how many rows changed. */
export function scrubOperations(sqlite: Sqlite, rows: readonly ScrubbedTexts[], nowIso: string): number {
  return driveSqlite(sqlite, transitions.scrubOperations(rows, nowIso));
}
