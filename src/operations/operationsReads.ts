import type { ScriptStore } from '../store/script.js';
import { limitRows, raw, type Sql, sql } from '../store/sql.js';
import { type AttemptRow, type OperationRow, OUTBOX_COLUMNS } from './rows.js';
import { type OperationState, UNSENT_STATES } from './states.js';

/**
 * The reads of the `outbox` tables that the API, the CLI and the demo make (the status snapshot's
 * aggregate counts aside, in health/; the rules' own reads live beside their writes), one statement
 * each, the same on both stores: rows exactly as `OperationRow` (numeric ids, times as ISO strings
 * with ms and `Z`, which both adapters return).
 */

/** The outbox's columns, quoted (PostgreSQL folds unquoted camelCase). */
const OUTBOX_LIST = raw(OUTBOX_COLUMNS.map((c) => `"${c}"`).join(', '));

/** States inlined as literals (code's constants, never input), so a partial index on them applies. */
const states = (list: readonly OperationState[]) => raw(list.map((s) => `'${s}'`).join(', '));

/** The statements, one per read; each function's result type is the row it reads. */
export const operationReads = {
  byRef: (ref: string) => sql`SELECT ${OUTBOX_LIST} FROM outbox WHERE "marketplaceTransactionRef" = ${ref}`,
  attemptsOf: (id: number) =>
    sql`SELECT id, outbox_id, started_at, duration_ms, status_code, error
          FROM outbox_attempts WHERE outbox_id = ${id} ORDER BY id`,
  page: ({ after, state, limit }: OperationsPageRequest) =>
    sql`SELECT ${OUTBOX_LIST} FROM outbox
         WHERE id > ${after}${state === null ? raw('') : sql` AND state = ${state}`} ORDER BY id ${limitRows(limit)}`,
  unsent: () => sql`SELECT count(*) AS n FROM outbox WHERE state IN (${states(UNSENT_STATES)})`,
  byState: () => sql`SELECT state, count(*) AS n FROM outbox GROUP BY state ORDER BY state`,
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

/** What the API's operations routes, `vcu-sync outbox` and the demo read, one call a request. */
export interface OperationsReads {
  byRef(ref: string): Promise<OperationRow | undefined>;
  /** The attempt log of a row, oldest first. */
  attemptsOf(id: number): Promise<AttemptRow[]>;
  page(request: OperationsPageRequest): Promise<OperationRow[]>;
  /** How many operations have not reached the operator yet (queued or sending). */
  unsentCount(): Promise<number>;
  /** How many operations are in each state (states with none left out). */
  countsByState(): Promise<Array<{ state: OperationState; n: number }>>;
}

/** The reads through a store. */
export function operationsReads(store: ScriptStore): OperationsReads {
  return {
    byRef: async (ref) => (await store.read<OperationRow>(operationReads.byRef(ref)))[0],
    attemptsOf: (id) => store.read<AttemptRow>(operationReads.attemptsOf(id)),
    page: (request) => store.read<OperationRow>(operationReads.page(request)),
    unsentCount: async () => (await store.read<{ n: number }>(operationReads.unsent()))[0]?.n ?? 0,
    countsByState: () => store.read<{ state: OperationState; n: number }>(operationReads.byState()),
  };
}
