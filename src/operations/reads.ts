import type { Statement } from 'better-sqlite3';
import type { Sqlite } from '../db/open.js';
import { perHandle } from '../db/perHandle.js';
import type { AttemptRow, OperationRow } from './rows.js';
import { FINISHED_STATES, type OperationState, UNSENT_STATES } from './states.js';

/**
 * Every read of the `outbox` tables that the loops, the CLI and the API make (the status
 * snapshot's aggregate counts aside, in health/). Synchronous; prepared once per connection.
 */

const inList = (states: readonly OperationState[]) => states.map((s) => `'${s}'`).join(', ');

function prepareAll(sqlite: Sqlite) {
  const p = <T = unknown>(sql: string) => sqlite.prepare(sql) as Statement<unknown[], T>;
  return {
    byRef: p<OperationRow>('SELECT * FROM outbox WHERE marketplaceTransactionRef = ?'),
    stateByRef: p<OperationSummary>('SELECT id, state FROM outbox WHERE marketplaceTransactionRef = ?'),
    stateById: p<OperationSummary>('SELECT id, state FROM outbox WHERE id = ?'),
    bodyByRef: p<string>('SELECT body FROM outbox WHERE marketplaceTransactionRef = ?').pluck(),
    attemptsOf: p<AttemptRow>('SELECT * FROM outbox_attempts WHERE outbox_id = ? ORDER BY id'),
    page: p<OperationRow>(`
      SELECT * FROM outbox WHERE id > @after AND (@state IS NULL OR state = @state) ORDER BY id LIMIT @limit`),
    nextDue: p<string | null>(`SELECT MIN(next_attempt_at) FROM outbox WHERE state = 'queued'`).pluck(),
    unsent: p<number>(`SELECT count(*) FROM outbox WHERE state IN (${inList(UNSENT_STATES)})`).pluck(),
    byState: p<{ state: OperationState; n: number }>(
      'SELECT state, count(*) AS n FROM outbox GROUP BY state ORDER BY state',
    ),
    tokenizations: p<string>(
      `SELECT body FROM outbox WHERE lower(operationType) IN (lower(?), 'tokenization')
         AND state IN ('accepted', 'approved')`,
    ).pluck(),
    awaitingDecision: p<AwaitingRow>(
      `SELECT id, marketplaceTransactionRef, operationType, accepted_at FROM outbox
        WHERE state = 'accepted' AND accepted_at < ?
        ORDER BY accepted_at`,
    ),
    acceptedWithPending: p<{ id: number; ref: string }>(
      `SELECT o.id, o.marketplaceTransactionRef AS ref FROM outbox o
        WHERE o.state = 'accepted'
          AND EXISTS (SELECT 1 FROM webhook_events e
                       WHERE e.marketplaceTransactionRef = o.marketplaceTransactionRef AND e.outcome = 'pending')`,
    ),
    scrubCandidates: p<Pick<OperationRow, 'id' | 'marketplaceTransactionRef' | 'body'>>(`
      SELECT id, marketplaceTransactionRef, body FROM outbox
      WHERE scrubbed_at IS NULL AND state IN (${inList(FINISHED_STATES)})
        AND COALESCE(finished_at, decided_at, updated_at) <= @cutoff
      ORDER BY id LIMIT @limit`),
    texts: p<Pick<OperationRow, 'response' | 'last_error' | 'decision_reason'>>(
      'SELECT response, last_error, decision_reason FROM outbox WHERE id = ?',
    ),
  };
}

const statements = perHandle(prepareAll);

/** An operation's id and state: what correlation needs. */
export interface OperationSummary {
  id: number;
  state: OperationState;
}

/** An accepted operation still waiting for the operator's decision. */
export interface AwaitingRow {
  id: number;
  marketplaceTransactionRef: string;
  operationType: string;
  accepted_at: string;
}

export function operationByRef(sqlite: Sqlite, ref: string): OperationRow | undefined {
  return statements(sqlite).byRef.get(ref);
}

export function stateByRef(sqlite: Sqlite, ref: string): OperationSummary | undefined {
  return statements(sqlite).stateByRef.get(ref);
}

export function stateById(sqlite: Sqlite, id: number): OperationSummary | undefined {
  return statements(sqlite).stateById.get(id);
}

/** The stored body of the operation `ref` (undefined when it is not queued). */
export function bodyOfRef(sqlite: Sqlite, ref: string): string | undefined {
  return statements(sqlite).bodyByRef.get(ref);
}

/** The attempt log of a row, oldest first. */
export function attemptsOf(sqlite: Sqlite, id: number): AttemptRow[] {
  return statements(sqlite).attemptsOf.all(id);
}

/** Rows after id `after` (optionally in one state), by id, at most `limit`. */
export function operationsPage(
  sqlite: Sqlite,
  page: { after: number; state: OperationState | null; limit: number },
): OperationRow[] {
  return statements(sqlite).page.all(page);
}

/** The earliest time a queued row becomes due (ISO), so an idle dispatcher sleeps exactly that long. */
export function nextDueAt(sqlite: Sqlite): string | null {
  return statements(sqlite).nextDue.get() ?? null;
}

/** How many operations have not reached the operator yet (queued or sending). */
export function unsentCount(sqlite: Sqlite): number {
  return statements(sqlite).unsent.get() ?? 0;
}

/** How many operations are in each state (states with none left out). */
export function countsByState(sqlite: Sqlite): Array<{ state: OperationState; n: number }> {
  return statements(sqlite).byState.all();
}

/** Bodies of this marketplace's accepted or approved Tokenizations (custody comes from them). */
export function tokenizationBodies(sqlite: Sqlite, wireSpelling: string): string[] {
  return statements(sqlite).tokenizations.all(wireSpelling);
}

/** Accepted operations with no decision whose 2xx is older than `olderThanIso`, oldest first. */
export function awaitingDecision(sqlite: Sqlite, olderThanIso: string): AwaitingRow[] {
  return statements(sqlite).awaitingDecision.all(olderThanIso);
}

/** Accepted operations that have decisions waiting in webhook_events (the inbox's safety net). */
export function acceptedWithPendingDecisions(sqlite: Sqlite): Array<{ id: number; ref: string }> {
  return statements(sqlite).acceptedWithPending.all();
}

/** Rows finished before `cutoff` and not scrubbed yet, a batch at a time, by id. */
export function scrubCandidates(
  sqlite: Sqlite,
  cutoffIso: string,
  limit: number,
): Array<Pick<OperationRow, 'id' | 'marketplaceTransactionRef' | 'body'>> {
  return statements(sqlite).scrubCandidates.all({ cutoff: cutoffIso, limit });
}

/** Every free-text column of a row that may quote its personal values. */
export function freeTextsOf(
  sqlite: Sqlite,
  id: number,
): Pick<OperationRow, 'response' | 'last_error' | 'decision_reason'> | undefined {
  return statements(sqlite).texts.get(id);
}
