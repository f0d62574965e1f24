import { UnreadableRecord } from '../operator/limits.js';
import { type NormalizeResult, normalizeRecord, recordKey } from '../operator/schemas.js';
import type { ChangeRow } from '../store/script.js';
import type { WriteTally } from './bookkeeping.js';
import type { TableDef } from './resources.js';
import type { ShapeVerdict } from './shape/shapeTypes.js';
import type { SchemaChangeNotice } from './shape/tracker.js';
import { contentHash, decideWrite, type FetchedRecord, type StoredState } from './writeDecision.js';

/**
 * A batch's writes decided in memory (pure), so a store writes a batch in a few multi-row
 * statements (store.ts). It walks the records in order with the pure decisions (`decideWrite`,
 * `contentHash`, `normalizeRecord`), against the rows the batch's keys had before it plus what
 * the batch itself wrote so far: per record, its tally and its `changes` kind. A record whose text
 * hashes to what its row holds was validated when that row was written, so it is not normalized
 * again (the re-sync fast path).
 */

/** What a batch did: its tally by outcome, and each quarantined record (to log). */
export interface BatchResult {
  tally: WriteTally;
  quarantined: { key: string | null; reason: string }[];
  /** Changes of the records' shape it found (new `schema_changes` rows). */
  schemaChanges?: SchemaChangeNotice[];
}

/** A mirror row to upsert: the last content the batch gave its key. */
export interface RowWrite {
  key: string;
  values: readonly (string | number | null)[];
  raw: string;
  hash: string;
  position: number | null;
  /** The key had a row before this batch (an update or a return; else a plain insert). */
  exists: boolean;
}

/** A quarantine row to insert. */
export interface QuarantineWrite {
  key: string | null;
  reason: string;
  raw: string;
  /** Its place in the units log (re-applied there once the shape policy admits it). */
  position: number | null;
}

/** Everything a batch writes, decided. */
export interface BatchPlan {
  /** Rows inserted, returned or updated, one per key (the last write wins). */
  rows: Map<string, RowWrite>;
  /** Units moved in the log with the same content: position only (keys not in `rows`). */
  positions: Map<string, number>;
  quarantine: QuarantineWrite[];
  /** Keys the scan sees for the first time (to add to `sync_seen`). */
  seen: string[];
  /** Its rows of the change feed, appended with its writes. */
  changes: ChangeRow[];
  /** Keys the shape policy quarantined anew (their rows are open now). */
  shapeQuarantined: string[];
  /** Keys the batch took (not quarantined): their open shape-quarantine rows resolve. */
  admitted: string[];
  result: BatchResult;
}

/** What a batch's records are, before any row is read: raw text, hash, key as sent, validation. */
export interface Prepared {
  record: FetchedRecord;
  raw: string;
  hash: string;
  rawKey: string | null;
  /** Filled when validation was needed (new or changed content, or no key). */
  normalized?: NormalizeResult;
  /** Why the store cannot hold it at all (quarantined, as an unreadable record is). */
  refused?: string;
  /** The shape policy quarantines it (a mapped field's type changed, an unseen value). */
  drifted?: string;
  /** The record as validated: mapped fields whose type changed set to null (`on_type_change = "store"`). */
  nulled?: Record<string, unknown>;
}

/** Validates a prepared record (its nulled form when the shape policy left columns null). */
function normalizePrepared(def: TableDef, p: Prepared): NormalizeResult {
  return normalizeRecord(def.table, p.nulled ?? p.record.value, p.raw);
}

/** `\u0000` in JSON text, not preceded by an escaped backslash. */
const NUL_ESCAPE = /(?:^|[^\\])(?:\\\\)*\\u0000/;

/** A record's JSON text as the mirror stores it (and hashes it). */
const serialize = (value: unknown): string => JSON.stringify(value) ?? 'null';

/**
 * Raw text, hash and key of each record (unreadable ones are kept as they are); `holdsNul` false
 * for a store whose text cannot hold U+0000 (PostgreSQL). A record with its bytes as sent (and a
 * store that holds any text) is serialized later, by {@link fillContent}, and only if it changed.
 */
export function prepare(
  def: TableDef,
  records: readonly FetchedRecord[],
  holdsNul: boolean,
  verdicts?: ReadonlyMap<FetchedRecord, ShapeVerdict>,
): Prepared[] {
  return records.map((record) => {
    if (record.value instanceof UnreadableRecord) return { record, raw: '', hash: '', rawKey: null };
    const deferred = holdsNul && record.wire !== undefined;
    const raw = deferred ? '' : serialize(record.value);
    const prepared: Prepared = {
      record,
      raw,
      hash: deferred ? '' : contentHash(raw),
      rawKey: recordKey(record.value, def.key),
    };
    // jsonb and text cannot hold U+0000, which JSON may escape: such a record goes to quarantine
    // (escaped) rather than failing its whole batch on every run.
    if (!holdsNul && NUL_ESCAPE.test(raw))
      prepared.refused = 'contains U+0000, which PostgreSQL cannot store';
    const verdict = verdicts?.size ? verdicts.get(record) : undefined;
    if (verdict?.kind === 'quarantine') prepared.drifted = verdict.reason;
    else if (verdict?.kind === 'null-columns') {
      const nulled = { ...(record.value as Record<string, unknown>) };
      for (const field of verdict.fields) nulled[field] = null;
      prepared.nulled = nulled;
    }
    return prepared;
  });
}

/**
 * Hashes what {@link prepare} left for later, once the batch's rows are read. A record sent as the
 * mirror would serialize it, whose bytes hash to its row's hash, is that row's content: it keeps no
 * raw text (an unchanged record is never written) and costs no JSON.stringify, which was the
 * largest part of a re-sync's CPU after parsing (docs/benchmarks.md, "Issue 30, third round"). Any
 * other record (new, changed, sent in another spelling, its key twice in the batch) is serialized.
 * Returns how many records carry each key, which {@link validate} goes by too.
 */
export function fillContent(
  prepared: Prepared[],
  stored: ReadonlyMap<string, StoredState>,
): ReadonlyMap<string, number> {
  const counts = keyCounts(prepared);
  for (const p of prepared) {
    if (p.hash !== '' || p.record.value instanceof UnreadableRecord) continue;
    const row = p.rawKey === null || counts.get(p.rawKey)! > 1 ? undefined : stored.get(p.rawKey);
    if (row && row.removedAt === null && row.custodyEndedAt === null) {
      const sent = contentHash(p.record.wire!);
      if (sent === row.hash) {
        p.hash = sent;
        continue;
      }
    }
    p.raw = serialize(p.record.value);
    p.hash = contentHash(p.raw);
  }
  return counts;
}

/** How many records of the batch carry each key (as sent). */
function keyCounts(prepared: readonly Prepared[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const p of prepared) if (p.rawKey !== null) counts.set(p.rawKey, (counts.get(p.rawKey) ?? 0) + 1);
  return counts;
}

/**
 * Validates the records whose stored row (by the key as sent) does not settle them, and returns
 * the keys validation spelled differently (a legacy field name), whose rows must be read too.
 */
export function validate(
  def: TableDef,
  prepared: Prepared[],
  stored: Map<string, StoredState>,
  counts: ReadonlyMap<string, number>,
): string[] {
  const more: string[] = [];
  for (const p of prepared) {
    if (p.record.value instanceof UnreadableRecord || p.refused || p.drifted) continue;
    const decision =
      p.rawKey === null ? 'insert' : decideWrite(stored.get(p.rawKey), p.hash, p.record.position);
    // A key twice in one batch may be decided against the batch's own first write: validate it too.
    const settled =
      (decision === 'unchanged' || decision === 'position') && (counts.get(p.rawKey ?? '') ?? 0) < 2;
    if (settled) continue;
    p.normalized = normalizePrepared(def, p);
    if (p.normalized.ok && p.normalized.record.key !== p.rawKey && !stored.has(p.normalized.record.key))
      more.push(p.normalized.record.key);
  }
  return more;
}

const NO_TALLY: WriteTally = { inserted: 0, updated: 0, unchanged: 0, quarantined: 0, removed: 0 };

/**
 * Decides the batch's writes (pure). `stored` holds the rows of every key the batch names (absent:
 * no row); `seenBefore` the keys this scan saw in earlier batches; `at` the batch's time.
 */
export function planBatch(
  def: TableDef,
  prepared: readonly Prepared[],
  stored: ReadonlyMap<string, StoredState>,
  seenBefore: ReadonlySet<string>,
  trackSeen: boolean,
  at: string,
  /** Keys with an open shape-quarantine row: quarantined again, they get no second row. */
  openShapeKeys?: ReadonlySet<string>,
): BatchPlan {
  const state = new Map(stored);
  const seen = new Set(seenBefore);
  const plan: BatchPlan = {
    rows: new Map(),
    positions: new Map(),
    quarantine: [],
    seen: [],
    changes: [],
    shapeQuarantined: [],
    admitted: [],
    result: { tally: { ...NO_TALLY }, quarantined: [] },
  };
  const { tally, quarantined } = plan.result;
  const markSeen = (key: string): boolean => {
    if (seen.has(key)) return false;
    seen.add(key);
    plan.seen.push(key);
    return true;
  };
  const quarantine = (key: string | null, reason: string, raw: string, position: number | null = null) => {
    plan.quarantine.push({ key, reason, raw, position });
    // A quarantined record with a key is still upstream: it must not be tombstoned.
    if (trackSeen && key !== null) markSeen(key);
    tally.quarantined++;
    quarantined.push({ key, reason });
  };
  const change = (key: string, kind: 'insert' | 'update') =>
    plan.changes.push({ resource: def.table, recordId: key, kind, at });

  for (const p of prepared) {
    const { record } = p;
    if (record.value instanceof UnreadableRecord) {
      quarantine(record.value.keyOf(def.key), record.value.reason, record.value.raw);
      continue;
    }
    if (p.refused) {
      quarantine(p.rawKey, p.refused, p.raw);
      continue;
    }
    let key = p.rawKey;
    let decision = key === null ? 'insert' : decideWrite(state.get(key), p.hash, record.position);
    // Drifted content the mirror already holds (stored under another policy) stays as it is.
    if (p.drifted && (key === null || (decision !== 'unchanged' && decision !== 'position'))) {
      if (key !== null && openShapeKeys?.has(key)) {
        // Still as it was quarantined: counted, seen, and no second row.
        if (trackSeen) markSeen(key);
        tally.quarantined++;
        continue;
      }
      quarantine(key, p.drifted, p.raw, record.position);
      if (key !== null) plan.shapeQuarantined.push(key);
      continue;
    }
    if (key !== null && openShapeKeys?.size) plan.admitted.push(key);
    let values: RowWrite['values'] | undefined;
    if (key === null || (decision !== 'unchanged' && decision !== 'position')) {
      p.normalized ??= normalizePrepared(def, p);
      const normalized = p.normalized;
      if (!normalized.ok) {
        quarantine(normalized.key, normalized.reason, p.raw);
        continue;
      }
      values = normalized.record.values;
      if (normalized.record.key !== key) {
        key = normalized.record.key;
        decision = decideWrite(state.get(key), p.hash, record.position);
      }
    }
    if (key === null) continue; // unreachable: a valid record has a key
    if (trackSeen && !markSeen(key)) continue; // a repeat: counted nowhere
    switch (decision) {
      case 'insert':
      case 'return':
      case 'update':
        plan.rows.set(key, {
          key,
          values: values!,
          // '' only if fillContent found the row's own content, which is then never written.
          raw: p.raw || serialize(p.record.value),
          hash: p.hash,
          position: record.position,
          exists: stored.has(key),
        });
        plan.positions.delete(key);
        state.set(key, { hash: p.hash, removedAt: null, position: record.position, custodyEndedAt: null });
        change(key, decision === 'update' ? 'update' : 'insert');
        if (decision === 'update') tally.updated++;
        else tally.inserted++;
        break;
      case 'position': {
        const row = plan.rows.get(key);
        if (row) row.position = record.position;
        else plan.positions.set(key, record.position!);
        state.set(key, { ...state.get(key)!, position: record.position });
        tally.unchanged++;
        break;
      }
      default:
        tally.unchanged++;
    }
  }
  return plan;
}
