import type { Sqlite } from '../db/open.js';
import { attemptsOf, operationByRef, operationsPage } from './reads.js';
import type { AttemptRow, OperationRow } from './rows.js';
import type { OperationState } from './states.js';

/** A page of the outbox: rows after id `after` (optionally in one state), by id, at most `limit`. */
export interface OperationsPageRequest {
  after: number;
  state: OperationState | null;
  limit: number;
}

/**
 * What the API's operations routes and `vcu-sync outbox` read, one call a request, the same on
 * both dialects: rows exactly as `OperationRow` (numeric ids, times as ISO strings with ms and `Z`).
 * SQLite's is reads.ts's statements as they are (synchronous, answered at once); PostgreSQL's is
 * pgReads.ts.
 */
export interface OperationsReads {
  byRef(ref: string): Promise<OperationRow | undefined>;
  /** The attempt log of a row, oldest first. */
  attemptsOf(id: number): Promise<AttemptRow[]>;
  page(request: OperationsPageRequest): Promise<OperationRow[]>;
}

/** The reads on SQLite: today's prepared statements. */
export function sqliteOperationsReads(sqlite: Sqlite): OperationsReads {
  return {
    byRef: async (ref) => operationByRef(sqlite, ref),
    attemptsOf: async (id) => attemptsOf(sqlite, id),
    page: async (request) => operationsPage(sqlite, request),
  };
}
