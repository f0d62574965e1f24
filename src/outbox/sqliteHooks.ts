import { commitQueueFor } from '../db/commitQueue.js';
import type { Sqlite } from '../db/open.js';
import type { DecisionEffect } from '../inbox/correlate.js';
import type { OperationRow } from '../operations/rows.js';
import { DISPATCHER_WORK } from '../operations/sqliteStore.js';
import { scrubFinishedRows } from './scrub.js';
import { acceptedInboxEffects } from './settle.js';

/**
 * What the dispatcher does beside the operations store seam that only a SQLite database has so
 * far: the webhook inbox (decisions that arrived before their row was accepted) and the scrub of
 * finished rows' personal fields. A dispatcher on the PostgreSQL store runs without them until
 * those move onto the seam (issue 18).
 */
export interface OutboxSqliteHooks {
  /**
   * Called in the same turn as an accepted row's settle, so on SQLite it runs in the same group
   * commit, right after the settle's own savepoint: masks the row's personal values in its webhook
   * events and applies the decisions that arrived early. Resolves after that commit (not its fsync,
   * as the settle: the inbox's sweep applies them again should a power loss take them back) with what to
   * report (see reportDecisionEffects); nothing unless the row is accepted by then.
   */
  afterAccepted(row: OperationRow, nowIso: string): Promise<DecisionEffect[]>;
  /** Scrubs the personal fields of rows finished at least `afterDays` ago; returns how many. */
  scrubFinished(nowMs: number, afterDays: number): number;
}

/** The hooks on the SQLite database the dispatcher's default store uses. */
export function sqliteOutboxHooks(sqlite: Sqlite): OutboxSqliteHooks {
  return {
    afterAccepted: (row, nowIso) =>
      commitQueueFor(sqlite).submit(() => acceptedInboxEffects(sqlite, row, nowIso), DISPATCHER_WORK),
    scrubFinished: (nowMs, afterDays) => scrubFinishedRows(sqlite, nowMs, afterDays),
  };
}
