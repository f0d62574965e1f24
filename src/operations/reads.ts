import type { Sqlite } from '../sqlite/open.js';
import { runSqlite } from '../sqlite/scripts.js';
import { raw, type Sql, sql } from '../store/sql.js';
import { type AttemptRow, type OperationRow, OUTBOX_COLUMNS } from './rows.js';
import { FINISHED_STATES, type OperationState, UNSENT_STATES } from './states.js';

/**
 * Every read of the `outbox` tables that the loops, the CLI and the API make (the status
 * snapshot's aggregate counts aside, in health/): one statement each, for either store
 * (./readsSeam.ts runs the API's through a store). The SQLite functions below run them
 * synchronously, as the loops and the group commit's jobs call them; prepared once per connection
 * and text (sqlite/scripts.ts).
 */

/** The outbox's columns, quoted (PostgreSQL folds unquoted camelCase). */
const OUTBOX_LIST = raw(OUTBOX_COLUMNS.map((c) => `"${c}"`).join(', '));

/** States inlined as literals (code's constants, never input), so a partial index on them applies. */
const states = (list: readonly OperationState[]) => raw(list.map((s) => `'${s}'`).join(', '));

/** The statements, one per read; each function's result type is the row it reads. */
export const operationReads = {
  byRef: (ref: string) => sql`SELECT ${OUTBOX_LIST} FROM outbox WHERE "marketplaceTransactionRef" = ${ref}`,
  stateByRef: (ref: string) => sql`SELECT id, state FROM outbox WHERE "marketplaceTransactionRef" = ${ref}`,
  stateById: (id: number) => sql`SELECT id, state FROM outbox WHERE id = ${id}`,
  bodyByRef: (ref: string) => sql`SELECT body FROM outbox WHERE "marketplaceTransactionRef" = ${ref}`,
  attemptsOf: (id: number) =>
    sql`SELECT id, outbox_id, started_at, duration_ms, status_code, error
          FROM outbox_attempts WHERE outbox_id = ${id} ORDER BY id`,
  page: ({ after, state, limit }: OperationsPageRequest) =>
    sql`SELECT ${OUTBOX_LIST} FROM outbox
         WHERE id > ${after}${state === null ? raw('') : sql` AND state = ${state}`} ORDER BY id LIMIT ${limit}`,
  nextDue: () => sql`SELECT MIN(next_attempt_at) AS due FROM outbox WHERE state = 'queued'`,
  unsent: () => sql`SELECT count(*) AS n FROM outbox WHERE state IN (${states(UNSENT_STATES)})`,
  byState: () => sql`SELECT state, count(*) AS n FROM outbox GROUP BY state ORDER BY state`,
  tokenizations: (wireSpelling: string) =>
    sql`SELECT body FROM outbox WHERE lower("operationType") IN (lower(${wireSpelling}), 'tokenization')
          AND state IN ('accepted', 'approved')`,
  awaitingDecision: (olderThanIso: string) =>
    sql`SELECT id, "marketplaceTransactionRef", "operationType", accepted_at FROM outbox
         WHERE state = 'accepted' AND accepted_at < ${olderThanIso} ORDER BY accepted_at`,
  acceptedWithPending: () =>
    sql`SELECT o.id, o."marketplaceTransactionRef" AS ref FROM outbox o
         WHERE o.state = 'accepted'
           AND EXISTS (SELECT 1 FROM webhook_events e
                        WHERE e."marketplaceTransactionRef" = o."marketplaceTransactionRef" AND e.outcome = 'pending')`,
  scrubCandidates: (cutoffIso: string, limit: number) =>
    sql`SELECT id, "marketplaceTransactionRef", body FROM outbox
         WHERE scrubbed_at IS NULL AND state IN (${states(FINISHED_STATES)})
           AND COALESCE(finished_at, decided_at, updated_at) <= ${cutoffIso}
         ORDER BY id LIMIT ${limit}`,
  texts: (id: number) => sql`SELECT response, last_error, decision_reason FROM outbox WHERE id = ${id}`,
} satisfies Record<string, (...args: never[]) => Sql>;

/** A page of the outbox: rows after id `after` (optionally in one state), by id, at most `limit`. */
export interface OperationsPageRequest {
  after: number;
  state: OperationState | null;
  limit: number;
}

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

/** The rows of `statement` on SQLite, now. */
function rowsOf<R>(sqlite: Sqlite, statement: Sql): R[] {
  return runSqlite(sqlite, statement).rows as unknown as R[];
}

/** The first row of `statement` on SQLite, now. */
function firstOf<R>(sqlite: Sqlite, statement: Sql): R | undefined {
  return rowsOf<R>(sqlite, statement)[0];
}

export function operationByRef(sqlite: Sqlite, ref: string): OperationRow | undefined {
  return firstOf(sqlite, operationReads.byRef(ref));
}

export function stateByRef(sqlite: Sqlite, ref: string): OperationSummary | undefined {
  return firstOf(sqlite, operationReads.stateByRef(ref));
}

export function stateById(sqlite: Sqlite, id: number): OperationSummary | undefined {
  return firstOf(sqlite, operationReads.stateById(id));
}

/** The stored body of the operation `ref` (undefined when it is not queued). */
export function bodyOfRef(sqlite: Sqlite, ref: string): string | undefined {
  return firstOf<{ body: string }>(sqlite, operationReads.bodyByRef(ref))?.body;
}

/** The attempt log of a row, oldest first. */
export function attemptsOf(sqlite: Sqlite, id: number): AttemptRow[] {
  return rowsOf(sqlite, operationReads.attemptsOf(id));
}

/** Rows after id `after` (optionally in one state), by id, at most `limit`. */
export function operationsPage(sqlite: Sqlite, page: OperationsPageRequest): OperationRow[] {
  return rowsOf(sqlite, operationReads.page(page));
}

/** The earliest time a queued row becomes due (ISO), so an idle dispatcher sleeps exactly that long. */
export function nextDueAt(sqlite: Sqlite): string | null {
  return firstOf<{ due: string | null }>(sqlite, operationReads.nextDue())?.due ?? null;
}

/** How many operations have not reached the operator yet (queued or sending). */
export function unsentCount(sqlite: Sqlite): number {
  return firstOf<{ n: number }>(sqlite, operationReads.unsent())?.n ?? 0;
}

/** How many operations are in each state (states with none left out). */
export function countsByState(sqlite: Sqlite): Array<{ state: OperationState; n: number }> {
  return rowsOf(sqlite, operationReads.byState());
}

/** Bodies of this marketplace's accepted or approved Tokenizations (custody comes from them). */
export function tokenizationBodies(sqlite: Sqlite, wireSpelling: string): string[] {
  return rowsOf<{ body: string }>(sqlite, operationReads.tokenizations(wireSpelling)).map((r) => r.body);
}

/** Accepted operations with no decision whose 2xx is older than `olderThanIso`, oldest first. */
export function awaitingDecision(sqlite: Sqlite, olderThanIso: string): AwaitingRow[] {
  return rowsOf(sqlite, operationReads.awaitingDecision(olderThanIso));
}

/** Accepted operations that have decisions waiting in webhook_events (the inbox's safety net). */
export function acceptedWithPendingDecisions(sqlite: Sqlite): Array<{ id: number; ref: string }> {
  return rowsOf(sqlite, operationReads.acceptedWithPending());
}

/** Rows finished before `cutoff` and not scrubbed yet, a batch at a time, by id. */
export function scrubCandidates(
  sqlite: Sqlite,
  cutoffIso: string,
  limit: number,
): Array<Pick<OperationRow, 'id' | 'marketplaceTransactionRef' | 'body'>> {
  return rowsOf(sqlite, operationReads.scrubCandidates(cutoffIso, limit));
}

/** Every free-text column of a row that may quote its personal values. */
export function freeTextsOf(
  sqlite: Sqlite,
  id: number,
): Pick<OperationRow, 'response' | 'last_error' | 'decision_reason'> | undefined {
  return firstOf(sqlite, operationReads.texts(id));
}
