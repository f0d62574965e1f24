import { all, appendFeed, run, type Script } from '../../store/script.js';
import type { TableDef } from '../resources.js';
import type { FetchedRecord } from '../writeDecision.js';
import { ShapeLearner } from './learner.js';
import type { ShapePolicy } from './policy.js';
import type { ShapeReader } from './shapeReads.js';
import * as statements from './shapeStatements.js';
import { changeKey, type ShapeChange, type ShapeVerdict } from './shapeTypes.js';

/**
 * The learned shape of one table during one run (mirror/store.ts holds one): it loads what earlier
 * runs learned, judges each batch's records before their transaction (the learner is pure), and
 * writes what changed inside that transaction, so a shape is never ahead of the data it was
 * learned from. New changes go to the change feed (`resource = 'schema_changes'`, the change's id)
 * and to the sink the root hands down (the subscribers' `schema.changed`), in that transaction too.
 */

/** A change as the feed, the log and the subscribers are told of it. */
export interface SchemaChangeNotice {
  id: number;
  /** The mirror table (`unit_operations`, `custody_projects`, ...). */
  resource: string;
  field: string;
  kind: ShapeChange['kind'];
  before: string | null;
  after: string;
  mapped: boolean;
  exampleKey: string | null;
  at: string;
}

/** Where new changes go besides the feed (the subscribers' deliveries): run in their transaction. */
export type SchemaChangeSink = (changes: readonly SchemaChangeNotice[]) => Script<void>;

/** A quarantined record to re-apply: what was received, and where it stood in the units log. */
export interface QuarantinedRecord {
  id: number;
  key: string | null;
  record: FetchedRecord;
}

export class ShapeTracker {
  private learner: ShapeLearner | undefined;
  /** Keys with an open shape-quarantine row (loaded with the shape): their rows resolve once written. */
  readonly openKeys = new Set<string>();
  /** Changes this run found, for the log (taken by {@link takeFound}). */
  private found: SchemaChangeNotice[] = [];

  constructor(
    private readonly def: TableDef,
    private readonly policy: ShapePolicy,
    private readonly sink: SchemaChangeSink | undefined,
  ) {}

  /** Loads what earlier runs learned (once per run, before its first batch). */
  async load(read: ShapeReader, at: string): Promise<void> {
    if (this.learner) return;
    const [fields, changes, open] = await Promise.all([
      read<statements.FieldRow>(statements.readFields(this.def.table)),
      read<{ id: number; field: string; kind: ShapeChange['kind']; after: string; first_seen_at: string }>(
        statements.readChangeKeys(this.def.table),
      ),
      read<{ record_id: string | null }>(statements.openShapeKeys(this.def.table)),
    ]);
    this.learner = new ShapeLearner(
      this.def,
      this.policy,
      {
        fields: fields.map(statements.fieldShape),
        changes: changes.map((c) => ({
          id: Number(c.id),
          field: c.field,
          kind: c.kind,
          after: c.after,
          firstSeenAt: statements.iso(c.first_seen_at),
        })),
      },
      at,
    );
    for (const { record_id } of open) if (record_id !== null) this.openKeys.add(record_id);
  }

  /** The open shape-quarantined records of the table, to judge again under today's policy and mapping. */
  async quarantined(read: ShapeReader): Promise<QuarantinedRecord[]> {
    const rows = await read<{ id: number; record_id: string | null; raw: string; position: number | null }>(
      statements.openShapeQuarantine(this.def.table),
    );
    const out: QuarantinedRecord[] = [];
    for (const r of rows) {
      let value: unknown;
      try {
        value = JSON.parse(r.raw);
      } catch {
        continue; // never shape-quarantined: such a record is unreadable, not drifted
      }
      out.push({
        id: Number(r.id),
        key: r.record_id,
        record: { value, position: r.position === null ? null : Number(r.position) },
      });
    }
    return out;
  }

  /**
   * Learns a batch's records (`count` false: records read again from quarantine) and returns the
   * policy's verdict on those it has one for; throws the run's failure (`on_type_change = "fail"`)
   * once the changes are written by `failed`.
   */
  judge(
    records: readonly FetchedRecord[],
    keyOf: (value: unknown) => string | null,
    at: string,
    count = true,
  ) {
    const learner = this.learner!;
    learner.at = at;
    const verdicts = new Map<FetchedRecord, ShapeVerdict>();
    for (const record of records) {
      const { value } = record;
      if (value === null || typeof value !== 'object' || Array.isArray(value)) continue;
      const verdict = learner.observe(value, keyOf(value), count);
      if (verdict) verdicts.set(record, verdict);
    }
    return verdicts;
  }

  /** A scan begins (after any re-application): see {@link ShapeLearner.beginScan}. */
  beginScan(): void {
    this.learner?.beginScan();
  }

  /** Why the run must stop (`on_type_change = "fail"`), if a record said so. */
  get failure(): string | null {
    return this.learner?.failure ?? null;
  }

  /** A complete scan ended: vanished fields and this run's counts (written by the next {@link writes}). */
  complete(scanStartedAt: string, at: string): void {
    if (!this.learner) return;
    this.learner.at = at;
    // A checkpoint's time as the store reads it back: compared as ISO text with fields' last sight.
    this.learner.complete(new Date(scanStartedAt).toISOString());
  }

  /**
   * The shape's writes of a batch, in its transaction: fields and changes learned since the last,
   * new changes to the feed and the sink, and the shape-quarantine rows of `written` keys resolved.
   */
  *writes(runId: number, at: string, written: readonly string[] = []): Script<void> {
    const learner = this.learner;
    if (!learner) return;
    const table = this.def.table;
    const { fields, changes } = learner.drain();
    if (fields.length > 0) yield* run(statements.upsertFields(table, fields));
    // New changes and known ones more records showed, in one statement (the unique key counts the known).
    const recorded = changes.filter((c) => c.id === null || c.count > 0);
    if (recorded.length > 0) {
      const rows = yield* all<{ id: number; field: string; kind: ShapeChange['kind']; after: string }>(
        statements.insertChanges(table, runId, recorded),
      );
      const ids = new Map(rows.map((r) => [changeKey(r.field, r.kind, r.after), Number(r.id)]));
      const notices: SchemaChangeNotice[] = [];
      for (const c of recorded) {
        const id = ids.get(changeKey(c.field, c.kind, c.after));
        if (id === undefined) continue;
        if (c.id === null)
          notices.push({
            id,
            resource: table,
            field: c.field,
            kind: c.kind,
            before: c.before,
            after: c.after,
            mapped: c.mapped,
            exampleKey: c.exampleKey,
            at: c.firstSeenAt,
          });
        learner.written(c, id);
      }
      yield* appendFeed(
        notices.map((n) => ({ resource: 'schema_changes', recordId: String(n.id), kind: 'insert', at })),
      );
      if (this.sink && notices.length > 0) yield* this.sink(notices);
      this.found.push(...notices);
    }
    const resolved = written.filter((k) => this.openKeys.has(k));
    if (resolved.length > 0) {
      yield* run(statements.resolveShapeQuarantine(table, resolved, at));
      for (const k of resolved) this.openKeys.delete(k);
    }
  }

  /** Notes a key quarantined by the policy now (its row is open). */
  quarantinedNow(key: string | null): void {
    if (key !== null) this.openKeys.add(key);
  }

  /** The changes found since the last call (for the log, once committed). */
  takeFound(): SchemaChangeNotice[] {
    const out = this.found;
    this.found = [];
    return out;
  }
}

/** A run stopped by `on_type_change = "fail"`: its message names the field; the changes it recorded are logged. */
export class ShapeFailure extends Error {
  constructor(
    message: string,
    readonly changes: SchemaChangeNotice[],
  ) {
    super(message);
    this.name = 'ShapeFailure';
  }
}
