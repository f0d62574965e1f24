import type { ScriptStore } from '../store/script.js';
import { type OperationsPageRequest, operationReads } from './reads.js';
import type { AttemptRow, OperationRow } from './rows.js';

export type { OperationsPageRequest } from './reads.js';

/**
 * What the API's operations routes and `vcu-sync outbox` read, one call a request, the same on
 * both stores: rows exactly as `OperationRow` (numeric ids, times as ISO strings with ms and `Z`,
 * which both adapters return), from the statements of ./reads.ts.
 */
export interface OperationsReads {
  byRef(ref: string): Promise<OperationRow | undefined>;
  /** The attempt log of a row, oldest first. */
  attemptsOf(id: number): Promise<AttemptRow[]>;
  page(request: OperationsPageRequest): Promise<OperationRow[]>;
}

/** The reads through a store. */
export function operationsReads(store: ScriptStore): OperationsReads {
  return {
    byRef: async (ref) => (await store.read<OperationRow>(operationReads.byRef(ref)))[0],
    attemptsOf: (id) => store.read<AttemptRow>(operationReads.attemptsOf(id)),
    page: (request) => store.read<OperationRow>(operationReads.page(request)),
  };
}
