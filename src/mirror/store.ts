import { recordKey } from '../operator/schemas.js';
import { all, appendFeed, type ChangeRow, first, run, type Script } from '../store/script.js';
import type { Dialect, Sql } from '../store/sql.js';
import { type BatchPlan, type BatchResult, fillContent, planBatch, prepare, validate } from './batchPlan.js';
import { type RunCounts, type WriteTally, withTally } from './bookkeeping.js';
import type { TableDef } from './resources.js';
import type { Checkpoint } from './scan/checkpoint.js';
import { removalRefusal, type ScanPlan, type StartFacts, type TombstoneVerdict } from './scan/cursor.js';
import * as shapeStatements from './shape/shapeStatements.js';
import type { ShapeVerdict } from './shape/shapeTypes.js';
import { type SchemaChangeNotice, ShapeFailure, type ShapeTracker } from './shape/tracker.js';
import type { RowsSource } from './statements.js';
import * as statements from './statements.js';
import { contentHash, type FetchedRecord, type StoredState } from './writeDecision.js';

/** One batch to commit: its records, the checkpoint that goes with them, the run's counts so far. */
export interface BatchWrite {
  runId: number;
  records: readonly FetchedRecord[];
  /** Record keys in `sync_seen` (a full scan that may tombstone). */
  trackSeen: boolean;
  /** Committed with the records (null: none, e.g. a custody read). */
  checkpoint: Checkpoint | null;
  /** The run's counts before this batch; saved with the batch's tally added. */
  counts: RunCounts;
}

/** The end of a full scan: tombstones as the verdict allows, then the idle checkpoint. */
export interface ScanFinish {
  runId: number;
  /** The resource, as its checkpoint is named. */
  resource: string;
  verdict: TombstoneVerdict;
  /** `sync.max_remove_share`. */
  maxRemoveShare: number;
  /** Left for the next run (null: the checkpoint is deleted). */
  checkpoint: Checkpoint | null;
  counts: RunCounts;
  /** When the scan began (its first page, perhaps in an earlier run): fields unseen since are gone. */
  scanStartedAt: string;
}

/**
 * The writes of the mirror, at batch granularity: each call is one transaction (records, their
 * `changes` rows and seen keys, the checkpoint and the run's counts together). The driver awaits
 * every call; {@link mirrorStore} is the one implementation, on either database.
 */
export interface MirrorStore {
  /** What a scan starts from; a scan that starts afresh clears the seen set first. */
  startScan(plan: ScanPlan, now: string): Promise<StartFacts>;
  commitBatch(batch: BatchWrite): Promise<BatchResult>;
  putCheckpoint(checkpoint: Checkpoint): Promise<void>;
  finishScan(
    finish: ScanFinish,
  ): Promise<{ removed: number; refusal: string | null; schemaChanges: SchemaChangeNotice[] }>;
  /**
   * Records the shape policy quarantined, judged again under today's policy and mapping: those it
   * now admits are written and their quarantine rows resolved (null: none to re-apply).
   */
  reapplyQuarantined(runId: number, counts: RunCounts): Promise<BatchResult | null>;
  /** A custody read of every id ended: its shape's vanished fields and counts (the changes found). */
  completeShape(runId: number, scanStartedAt: string): Promise<SchemaChangeNotice[]>;
  /**
   * A custody read answered 404: the id leaves custody; true when a row was in custody. With
   * `rowOnly`, only the mirror row keyed `id` leaves (the read answered under another key: the id
   * is still read, its record lives under the new key).
   */
  endCustody(runId: number, kind: string, id: string, counts: RunCounts, rowOnly?: boolean): Promise<boolean>;
  /**
   * How many records of pages read whole a scan may hold before it commits them (default:
   * scan/heldWrites.ts HELD_RECORDS, what SQLite's fsync and WAL checkpoint call for).
   */
  readonly heldRecords?: number;
}

/**
 * The database as the mirror's writes need it (sqlite/mirror.ts, postgres/mirror.ts): scripts in
 * transactions, and what differs in how a batch is best written there.
 */
export interface MirrorDb {
  readonly dialect: Dialect;
  /** A batch's transaction (SQLite: IMMEDIATE, its fsync after COMMIT, out of the write lock). */
  transaction<T>(script: Script<T>): Promise<T>;
  /** A write of the run's bookkeeping outside a batch (SQLite: waits out another process's lock). */
  write<T>(script: Script<T>): Promise<T>;
  read<R extends object>(statement: Sql): Promise<R[]>;
  /** See {@link MirrorStore.heldRecords}. */
  readonly heldRecords?: number;
  /** Whether text and JSON columns hold U+0000 (PostgreSQL's do not: such records are quarantined). */
  readonly holdsNul: boolean;
  /** How it takes many rows of an INSERT fastest (default: a `VALUES` list). */
  readonly rowsSource?: RowsSource;
  /**
   * Statements are prepared and kept per text (SQLite): multi-row statements come in
   * power-of-two sizes only, so a handful of texts serve every batch.
   */
  readonly preparesStatements: boolean;
  /**
   * Another writer of the same database may be waiting for the lock (SQLite's API enqueue): a
   * batch commits in parts of `every` records while `requested()`, standing aside (`wait()`)
   * between them; the checkpoint and progress commit only with its last part.
   */
  readonly standAside?: { every: number; requested(): boolean; wait(): void };
}

/** Most values one statement binds (SQLite allows 32,766; PostgreSQL 65,535). */
const MAX_VALUES = 30_000;

/**
 * `items` in consecutive groups of at most `MAX_VALUES / perItem`, each a power of two when the
 * database prepares statements by text (pure).
 */
export function statementGroups<T>(items: readonly T[], perItem: number, powersOfTwo: boolean): T[][] {
  const most = Math.max(1, Math.floor(MAX_VALUES / perItem));
  const groups: T[][] = [];
  for (let i = 0; i < items.length; ) {
    let size = Math.min(most, items.length - i);
    if (powersOfTwo) size = 2 ** Math.floor(Math.log2(size));
    groups.push(items.slice(i, i + size));
    i += size;
  }
  return groups;
}

const NO_TALLY: WriteTally = { inserted: 0, updated: 0, unchanged: 0, quarantined: 0, removed: 0 };

/**
 * The store of one mirror table on `db`; `now` gives each transaction's ISO time; `fence` (a run
 * holding a lease that can be lost) runs first in every write of the run and throws once the
 * lease is gone.
 */
export function mirrorStore(
  db: MirrorDb,
  def: TableDef,
  now: () => string,
  fence?: () => Script<void>,
  shape?: ShapeTracker,
): MirrorStore {
  const name = def.table;
  const groups = <T>(items: readonly T[], perItem: number) =>
    statementGroups(items, perItem, db.preparesStatements);
  const rowValues = def.fields.length + (def.positioned ? 5 : 4);

  /** The rows (and whether this scan saw them) of `keys`, as the write decision needs them. */
  function* lookup(
    keys: readonly string[],
    trackSeen: boolean,
    stored: Map<string, StoredState>,
    seen: Set<string>,
  ) {
    for (const group of groups(keys, trackSeen ? 2 : 1)) {
      for (const r of yield* all<statements.LookupRow>(statements.lookupRows(def, group, trackSeen))) {
        if (r.seen) seen.add(r.key);
        if (r.hash === null) continue;
        stored.set(r.key, {
          hash: r.hash,
          // Only whether it is set matters to the decision.
          removedAt: r.removed ? 'removed' : null,
          position: r.position === null ? null : Number(r.position),
          custodyEndedAt: r.ended ? 'ended' : null,
        });
      }
    }
  }

  /** Every write of a planned part of a batch but its feed rows. */
  function* writePlan(plan: BatchPlan, runId: number, at: string): Script<void> {
    const rows = [...plan.rows.values()];
    for (const existing of [false, true]) {
      const some = rows.filter((r) => r.exists === existing);
      for (const group of groups(some, rowValues))
        yield* run(statements.upsertRows(def, group, at, existing, db.rowsSource));
    }
    for (const group of groups([...plan.positions], 2)) yield* run(statements.setPositions(def, group));
    const quarantine = db.holdsNul
      ? plan.quarantine
      : // text cannot hold NUL; the excerpt of an unreadable body might.
        plan.quarantine.map((x) => ({ ...x, raw: x.raw.replaceAll('\0', '\\u0000') }));
    for (const group of groups(quarantine, 7))
      yield* run(statements.addQuarantine(name, runId, at, group, db.rowsSource));
    for (const group of groups(plan.seen, 2)) yield* run(statements.addSeen(name, group, db.rowsSource));
  }

  /** Reads, decides and writes `records` (a part of a batch), adding what they did to `sum`. */
  function* writeRecords(
    batch: BatchWrite,
    records: readonly FetchedRecord[],
    at: string,
    sum: BatchResult,
    verdicts: ReadonlyMap<FetchedRecord, ShapeVerdict> | undefined,
  ) {
    const prepared = prepare(def, records, db.holdsNul, verdicts);
    const stored = new Map<string, StoredState>();
    const seen = new Set<string>();
    const keys = new Set<string>();
    for (const p of prepared) if (p.rawKey !== null) keys.add(p.rawKey);
    yield* lookup([...keys], batch.trackSeen, stored, seen);
    const counts = fillContent(prepared, stored);
    // Keys validation spelled differently (a legacy field name): their rows decide instead.
    const more = validate(def, prepared, stored, counts);
    if (more.length > 0) yield* lookup(more, batch.trackSeen, stored, seen);
    const plan = planBatch(def, prepared, stored, seen, batch.trackSeen, at, shape?.openKeys);
    yield* writePlan(plan, batch.runId, at);
    yield* appendFeed(plan.changes);
    if (shape) {
      for (const key of plan.shapeQuarantined) shape.quarantinedNow(key);
      yield* shape.writes(batch.runId, at, plan.admitted);
    }
    const { tally, quarantined } = plan.result;
    for (const k of Object.keys(tally) as (keyof WriteTally)[]) sum.tally[k] += tally[k];
    sum.quarantined.push(...quarantined);
  }

  /**
   * A batch's records from `from` on; returns the index after the last one written: short of the
   * end when another writer waits for the lock (see {@link MirrorDb.standAside}).
   */
  function* writeBatch(
    batch: BatchWrite,
    from: number,
    sum: BatchResult,
    verdicts?: ReadonlyMap<FetchedRecord, ShapeVerdict>,
  ): Script<number> {
    const at = now();
    if (fence) yield* fence();
    const { records } = batch;
    const every = db.standAside?.every ?? records.length;
    let i = from;
    while (i < records.length) {
      const end = Math.min(records.length, i + every);
      yield* writeRecords(batch, records.slice(i, end), at, sum, verdicts);
      i = end;
      if (i < records.length && db.standAside?.requested()) return i;
    }
    if (batch.checkpoint) yield* run(statements.putCheckpoint(batch.checkpoint, at));
    yield* run(statements.progress(batch.runId, withTally(batch.counts, sum.tally)));
    return records.length;
  }

  function* finish(f: ScanFinish): Script<{ removed: number; refusal: string | null }> {
    const at = now();
    if (shape && f.verdict.kind !== 'skip') {
      // A complete scan: fields none of its records had are gone (never decided on a partial one).
      shape.complete(f.scanStartedAt, at);
      yield* shape.writes(f.runId, at);
    }
    if (fence) yield* fence();
    let removed = 0;
    let refusal: string | null = null;
    const changes: ChangeRow[] = [];
    if (f.verdict.kind === 'guarded') {
      const unseen = Number((yield* first<{ n: number }>(statements.unseenCount(def)))?.n ?? 0);
      const live = unseen > 0 ? Number((yield* first<{ n: number }>(statements.liveCount(def)))?.n ?? 0) : 0;
      refusal = removalRefusal(f.resource, unseen, live, f.maxRemoveShare);
      if (refusal === null && unseen > 0) {
        for (const { key } of yield* all<{ key: string }>(statements.tombstoneUnseen(def, at)))
          changes.push({ resource: name, recordId: key, kind: 'remove', at });
        removed = changes.length;
      }
    }
    if (f.verdict.kind !== 'no-seen-set') yield* run(statements.clearSeen(name));
    yield* run(
      f.checkpoint ? statements.putCheckpoint(f.checkpoint, at) : statements.deleteCheckpoint(f.resource),
    );
    yield* run(statements.progress(f.runId, withTally(f.counts, { removed })));
    yield* appendFeed(changes);
    return { removed, refusal };
  }

  function* endCustody(
    runId: number,
    kind: string,
    id: string,
    counts: RunCounts,
    rowOnly: boolean,
  ): Script<boolean> {
    const at = now();
    if (fence) yield* fence();
    if (!rowOnly) yield* run(statements.endCustodyId(kind, id, at));
    const ended = def.custody ? (yield* run(statements.endCustody(def, id, at))).rowCount > 0 : false;
    yield* run(statements.progress(runId, withTally(counts, { removed: ended ? 1 : 0 })));
    if (ended) yield* appendFeed([{ resource: name, recordId: id, kind: 'remove', at }]);
    return ended;
  }

  const read = <R extends object>(statement: Sql) => db.read<R>(statement);

  /**
   * The shape policy's verdicts on a batch's records, judged before its transaction; a run whose
   * policy says fail records what it found, then stops.
   */
  async function judge(runId: number, records: readonly FetchedRecord[]) {
    if (!shape) return undefined;
    const at = now();
    await shape.load(read, at);
    const verdicts = shape.judge(records, (v) => recordKey(v, def.key), at);
    if (shape.failure) {
      await db.transaction(shape.writes(runId, at));
      throw new ShapeFailure(shape.failure, shape.takeFound());
    }
    return verdicts;
  }

  /**
   * The units log's rows at positions `from` to `to`, as the overlap check compares them. A position
   * whose record the shape policy holds back compares with what was held back: the upstream sending
   * it again unchanged is no mismatch (else every incremental run would fall back to a full scan).
   */
  const overlap = async (from: number, to: number) => {
    if (!def.positioned) return [];
    const rows = (
      await db.read<{ key: string; hash: string; position: number }>(statements.overlapRows(def, from, to))
    ).map((r) => ({ key: r.key, hash: r.hash, position: Number(r.position) }));
    if (!shape || shape.openKeys.size === 0) return rows;
    const held = await db.read<{ key: string; raw: string; position: number }>(
      shapeStatements.heldAt(name, from, to),
    );
    const byPosition = new Map(rows.map((r) => [r.position, r]));
    for (const h of held)
      byPosition.set(Number(h.position), {
        key: h.key,
        hash: contentHash(h.raw),
        position: Number(h.position),
      });
    return [...byPosition.values()].sort((a, b) => a.position - b.position);
  };

  return {
    ...(db.heldRecords === undefined ? {} : { heldRecords: db.heldRecords }),
    async startScan(plan, at) {
      if (shape) {
        await shape.load(read, at);
        shape.beginScan();
      }
      let hasLive = false;
      if (plan.trackSeen === null) {
        hasLive = Boolean((await db.read<{ live: unknown }>(statements.hasLive(def)))[0]?.live);
        // A fresh scan decides its seen set now: whatever an earlier, unfinished one left is stale.
        await db.write(run(statements.clearSeen(name)));
      }
      return {
        now: at,
        hasLive,
        overlapRows: plan.window ? await overlap(plan.window.start, plan.window.known) : [],
        logStartKey: plan.window ? ((await overlap(0, 1))[0]?.key ?? null) : null,
      };
    },
    async commitBatch(batch) {
      const sum: BatchResult = { tally: { ...NO_TALLY }, quarantined: [] };
      const verdicts = await judge(batch.runId, batch.records);
      for (let from = 0; ; ) {
        from = await db.transaction(writeBatch(batch, from, sum, verdicts));
        if (from >= batch.records.length) {
          if (shape) sum.schemaChanges = shape.takeFound();
          return sum;
        }
        // Committed part of the batch for a waiting writer (the API's enqueue): let it take the lock.
        db.standAside?.wait();
      }
    },
    async putCheckpoint(checkpoint) {
      await db.write(run(statements.putCheckpoint(checkpoint, now())));
    },
    async finishScan(f) {
      await shape?.load(read, now());
      const result = await db.transaction(finish(f));
      return { ...result, schemaChanges: shape?.takeFound() ?? [] };
    },
    async reapplyQuarantined(runId, counts) {
      if (!shape) return null;
      await shape.load(read, now());
      if (shape.openKeys.size === 0) return null;
      const rows = await shape.quarantined(read);
      const verdicts = shape.judge(
        rows.map((r) => r.record),
        (v) => recordKey(v, def.key),
        now(),
        false,
      );
      const admitted = rows.filter((r) => verdicts.get(r.record)?.kind !== 'quarantine').map((r) => r.record);
      if (admitted.length === 0) return null;
      const sum: BatchResult = { tally: { ...NO_TALLY }, quarantined: [] };
      const batch: BatchWrite = { runId, records: admitted, trackSeen: false, checkpoint: null, counts };
      for (let from = 0; from < admitted.length; )
        from = await db.transaction(writeBatch(batch, from, sum, verdicts));
      sum.schemaChanges = shape.takeFound();
      return sum;
    },
    async completeShape(runId, scanStartedAt) {
      if (!shape) return [];
      await shape.load(read, now());
      shape.complete(scanStartedAt, now());
      await db.transaction(shape.writes(runId, now()));
      return shape.takeFound();
    },
    endCustody: (runId, kind, id, counts, rowOnly = false) =>
      db.transaction(endCustody(runId, kind, id, counts, rowOnly)),
  };
}
