import { UnreadableRecord } from '../operator/limits.js';
import { normalizeRecord } from '../operator/schemas.js';
import { contentHash, decideWrite, rawKey } from './decide.js';
import type { RunCounts, SyncQueries } from './queries.js';
import type { TableQueries } from './tableQueries.js';

/** One fetched record, with its log position when the table keeps one. */
export interface FetchedRecord {
  value: unknown;
  position: number | null;
}

/** Options of {@link RecordWriter}. */
export interface RecordWriterOptions {
  runId: number;
  /** Record keys in `sync_seen`, skipping a key seen before in the same scan (default: false). */
  trackSeen: boolean;
  counts: RunCounts;
  /** Called for each quarantined record, to log it (default: none). */
  onQuarantine?: (key: string | null, reason: string) => void;
}

/**
 * Applies fetched records to one mirror table. Must be called inside a transaction: the caller
 * commits each batch together with its checkpoint.
 */
export class RecordWriter {
  constructor(
    private readonly table: TableQueries,
    private readonly sync: SyncQueries,
    private readonly options: RecordWriterOptions,
  ) {}

  /** Writes one record (or quarantines it); `at` is the ISO time of the batch. */
  apply(record: FetchedRecord, at: string): void {
    const { table, sync, options } = this;
    const { counts } = options;
    const name = table.def.table;
    if (record.value instanceof UnreadableRecord) {
      this.quarantine(record.value.keyOf(table.def.key), record.value.reason, record.value.raw, at);
      return;
    }
    const raw = JSON.stringify(record.value) ?? 'null';
    const hash = contentHash(raw);
    if (this.applyUnchanged(record, hash)) return;
    const normalized = normalizeRecord(name, record.value, raw);
    if (!normalized.ok) {
      this.quarantine(normalized.key, normalized.reason, raw, at);
      return;
    }
    const { key, values } = normalized.record;
    if (options.trackSeen && !sync.markSeen(name, key)) return; // seen earlier in this scan: drift
    const decision = decideWrite(table.get(key), hash, record.position);
    switch (decision) {
      case 'insert':
        table.insert(values, raw, hash, at, record.position);
        sync.addChange(name, key, 'insert', at);
        counts.inserted++;
        return;
      case 'return':
        table.update(key, values, raw, hash, at, record.position);
        sync.addChange(name, key, 'insert', at);
        counts.inserted++;
        return;
      case 'update':
        table.update(key, values, raw, hash, at, record.position);
        sync.addChange(name, key, 'update', at);
        counts.updated++;
        return;
      case 'position':
        table.setPosition(key, record.position!);
        counts.unchanged++;
        return;
      default:
        counts.unchanged++;
    }
  }

  private quarantine(key: string | null, reason: string, raw: string, at: string): void {
    const { sync, options } = this;
    const name = this.table.def.table;
    options.counts.quarantined++;
    sync.quarantine(name, key, options.runId, reason, raw, at);
    // A quarantined record with a key is still upstream: it must not be tombstoned.
    if (options.trackSeen && key !== null) sync.markSeen(name, key);
    options.onQuarantine?.(key, reason);
  }

  /**
   * The re-sync fast path: a record whose text hashes to what its row holds was validated when that
   * row was written, so it is not normalized again. True when the record was handled here.
   */
  private applyUnchanged(record: FetchedRecord, hash: string): boolean {
    const { table, sync, options } = this;
    const key = rawKey(record.value, table.def.key);
    if (key === null) return false;
    const stored = table.get(key);
    if (stored?.hash !== hash) return false;
    // The same text gives the same normalized key, so this row is the record's own.
    const decision = decideWrite(stored, hash, record.position);
    if (decision !== 'unchanged' && decision !== 'position') return false;
    const name = table.def.table;
    if (options.trackSeen && !sync.markSeen(name, key)) return true; // seen earlier in this scan: drift
    if (decision === 'position') table.setPosition(key, record.position!);
    options.counts.unchanged++;
    return true;
  }
}

/** The key and content hash of a raw record, as the mirror would store them (for the overlap check). */
export function identify(value: unknown, keyField: string): { key: string | null; hash: string } {
  return { key: rawKey(value, keyField), hash: contentHash(JSON.stringify(value) ?? 'null') };
}
