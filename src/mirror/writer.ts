import { UnreadableRecord } from '../operator/limits.js';
import { normalizeRecord, recordKey } from '../operator/schemas.js';
import type { Bookkeeping } from './bookkeeping.js';
import type { MirrorTable } from './mirrorTable.js';
import { contentHash, decideWrite } from './writeDecision.js';

/** One fetched record, with its log position when the table keeps one. */
export interface FetchedRecord {
  value: unknown;
  position: number | null;
}

/**
 * What writing one record did: `repeat` is a key this scan already wrote (records moved under the
 * offsets), counted nowhere; `quarantined` carries what the log line says.
 */
export type WriteOutcome =
  | { kind: 'inserted' | 'updated' | 'unchanged' | 'repeat' }
  | { kind: 'quarantined'; key: string | null; reason: string };

// One object per outcome, not one per record: a re-sync of a million unchanged records allocates none.
const INSERTED: WriteOutcome = { kind: 'inserted' };
const UPDATED: WriteOutcome = { kind: 'updated' };
const UNCHANGED: WriteOutcome = { kind: 'unchanged' };
const REPEAT: WriteOutcome = { kind: 'repeat' };

/**
 * Applies fetched records to one mirror table. Must be called inside a transaction: the store
 * commits each batch together with its checkpoint.
 */
export class RecordWriter {
  constructor(
    private readonly table: MirrorTable,
    private readonly book: Bookkeeping,
    private readonly runId: number,
    /** Record keys in `sync_seen`, skipping a key seen before in the same scan. */
    private readonly trackSeen: boolean,
  ) {}

  /**
   * Writes one record (or quarantines it); `at` is the ISO time of the batch. The row is looked up
   * once by the record's raw key; a record whose text hashes to what its row holds was validated
   * when that row was written, so it is not normalized again (the re-sync fast path).
   */
  apply(record: FetchedRecord, at: string): WriteOutcome {
    const { table, book } = this;
    const name = table.def.table;
    if (record.value instanceof UnreadableRecord) {
      // Too large or too deep to read: never parsed, quarantined with the key its excerpt shows.
      return this.quarantine(record.value.keyOf(table.def.key), record.value.reason, record.value.raw, at);
    }
    const raw = JSON.stringify(record.value) ?? 'null';
    const hash = contentHash(raw);
    let key = recordKey(record.value, table.def.key);
    let stored = key === null ? undefined : table.get(key);
    let decision = decideWrite(stored, hash, record.position);
    let values: (string | number | null)[] | undefined;
    if (key === null || (decision !== 'unchanged' && decision !== 'position')) {
      const normalized = normalizeRecord(name, record.value, raw);
      if (!normalized.ok) return this.quarantine(normalized.key, normalized.reason, raw, at);
      values = normalized.record.values;
      if (normalized.record.key !== key) {
        // Validation spelled the key differently (a legacy field name): that row decides instead.
        key = normalized.record.key;
        stored = table.get(key);
        decision = decideWrite(stored, hash, record.position);
      }
    }
    if (this.trackSeen && !book.markSeen(name, key)) return REPEAT;
    switch (decision) {
      case 'insert':
        table.insert(values!, raw, hash, at, record.position);
        book.addChange(name, key, 'insert', at);
        return INSERTED;
      case 'return':
        table.update(key, values!, raw, hash, at, record.position);
        book.addChange(name, key, 'insert', at);
        return INSERTED;
      case 'update':
        table.update(key, values!, raw, hash, at, record.position);
        book.addChange(name, key, 'update', at);
        return UPDATED;
      case 'position':
        table.setPosition(key, record.position!);
        return UNCHANGED;
      default:
        return UNCHANGED;
    }
  }

  private quarantine(key: string | null, reason: string, raw: string, at: string): WriteOutcome {
    const name = this.table.def.table;
    this.book.quarantine(name, key, this.runId, reason, raw, at);
    // A quarantined record with a key is still upstream: it must not be tombstoned.
    if (this.trackSeen && key !== null) this.book.markSeen(name, key);
    return { kind: 'quarantined', key, reason };
  }
}
