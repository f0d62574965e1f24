import { normalizeRecord } from '../operator/schemas.js';
import type { ListResource } from './resources.js';
import type { ScanState } from './scanState.js';
import { type FetchedRecord, identify } from './writer.js';

/** The incremental window no longer matches the mirror: the run falls back to a full scan. */
export class OverlapMismatch extends Error {}

/** Checks one record of the incremental overlap against the mirror row at its position. */
export function verifyOverlap(state: ScanState, resource: ListResource, record: FetchedRecord): void {
  const position = record.position ?? 0;
  const stored = state.overlap.get(position);
  const { key, hash } = identify(record.value, resource.key);
  // A position the mirror has no row for matches only if it holds a record that is quarantined again.
  const matches = stored
    ? stored.key === key && stored.hash === hash
    : !normalizeRecord(resource.table, record.value).ok;
  if (!matches)
    throw new OverlapMismatch(`position ${position}: expected ${stored?.key ?? 'no record'}, got ${key}`);
  state.verified.add(position);
}

/** Throws unless every position of the overlap was read and matched. */
export function requireCompleteOverlap(state: ScanState): void {
  const window = state.plan.window;
  if (!window) return;
  const expected = window.known - window.start;
  if (state.verified.size !== expected) {
    throw new OverlapMismatch(`found ${state.verified.size} of the ${expected} overlap positions`);
  }
}
