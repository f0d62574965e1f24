import crypto from 'node:crypto';
import { recordKey } from '../operator/schemas.js';

/** One fetched record, with its log position when the table keeps one. */
export interface FetchedRecord {
  value: unknown;
  position: number | null;
  /** Its bytes as the operator sent them, when the page was parsed whole (listBody.ts, wireTexts). */
  wire?: Uint8Array | undefined;
}

/** What the mirror holds for a key, as far as deciding a write needs. */
export interface StoredState {
  hash: string;
  removedAt: string | null;
  position: number | null;
  custodyEndedAt: string | null;
}

/**
 * What one fetched record does to its row:
 * `insert` (new), `return` (tombstoned or out of custody and back: cleared, fed as an insert),
 * `update` (content changed), `position` (same content, moved in the units log: no feed entry),
 * `unchanged` (no write at all).
 */
export type WriteDecision = 'insert' | 'return' | 'update' | 'position' | 'unchanged';

/** Decides the write for one record (pure). `position` is null for tables without one. */
export function decideWrite(
  stored: StoredState | undefined,
  hash: string,
  position: number | null,
): WriteDecision {
  if (!stored) return 'insert';
  if (stored.removedAt !== null || stored.custodyEndedAt !== null) return 'return';
  if (stored.hash !== hash) return 'update';
  if (position !== null && stored.position !== position) return 'position';
  return 'unchanged';
}

// One-shot crypto.hash (Node >= 20.12) skips the Hash object per record; same digest either way.
const oneShot = (
  crypto as { hash?: (algorithm: string, data: string | Uint8Array, encoding: 'base64url') => string }
).hash;

/**
 * Content hash of a record's JSON text (or of its UTF-8 bytes: the same digest); md5 is enough to
 * tell change, and cheap. Stored in every row and compared by the units overlap check: changing
 * the algorithm would make every record of an existing mirror look changed once.
 */
export function contentHash(raw: string | Uint8Array): string {
  return oneShot
    ? oneShot('md5', raw, 'base64url')
    : crypto.createHash('md5').update(raw).digest('base64url');
}

/** The key and content hash of a raw record, as the mirror would store them (for the overlap check). */
export function identify(value: unknown, keyField: string): { key: string | null; hash: string } {
  return { key: recordKey(value, keyField), hash: contentHash(JSON.stringify(value) ?? 'null') };
}
