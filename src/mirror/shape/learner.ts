import type { TableDef } from '../resources.js';
import { SHAPE_REASON_PREFIX, type ShapePolicy } from './policy.js';
import {
  type ChangeKind,
  changeKey,
  type FieldShape,
  JSON_TYPES,
  type JsonType,
  keyFormat,
  MAX_FIELDS,
  type ShapeChange,
  type ShapeVerdict,
  type Signature,
  type StoredShape,
  typeCode,
  typesText,
} from './shapeTypes.js';
import { SignatureCache } from './signatures.js';

/**
 * The shape of one resource's records, learned from the records a run already parsed, and what
 * changed in it (issue 28). Pure: the store (shape/tracker.ts) loads what earlier runs learned and
 * writes what this one found.
 *
 * Cheap per record: a record's key set and JSON types hash to a signature (two 32-bit FNV-style
 * hashes, no string built), and what a signature means (its fields' types, which mapped field left
 * its admitted types, which enum fields it carries) is worked out once per distinct signature. Per
 * record there remain the hash, the enum fields' values (a set lookup each) and the key's format.
 *
 * - *Baseline*: until a resource has had one complete scan, everything seen is learned, nothing
 *   reported (a new mirror has nothing to compare with).
 * - *Admitted types*: a field mapped to a column takes the JSON types it came with when first seen
 *   (null is always admitted: columns are nullable); another type is a `type-changed` change and
 *   the record goes the policy's way. A field kept in `_raw` only evolves: its new type is
 *   reported, then learned. A new mapping (operator/fields.ts changed the column's type) admits
 *   every type seen so far.
 * - *Vanished*: decided only at the end of a complete scan, for fields no record of it had.
 */

/** Values kept per enum field: past this it is not an enum, and new values are not reported. */
const MAX_VALUES = 256;

export class ShapeLearner {
  private readonly fields = new Map<string, FieldShape>();
  private readonly changes = new Map<string, ShapeChange>();
  /** Per field, its (latest) appearance: every record with the field shows it. */
  private readonly added = new Map<string, ShapeChange>();
  /** Per enum field, the values reported as new (by value): every record with one shows it. */
  private readonly newValues = new Map<string, Map<string, ShapeChange>>();
  /** Key formats reported as new (by format): every record keyed so shows it. */
  private readonly newFormats = new Map<string, ShapeChange>();
  private readonly signatures = new SignatureCache<Signature>();
  private readonly mapping: ReadonlyMap<string, string>;
  /** Fields seen since the scan began ({@link beginScan}): their `lastSeenAt` is written once per scan. */
  private readonly seenThisScan = new Set<string>();
  /** Bumped per scan: a signature marks its fields seen once per scan. */
  private scan = 0;
  private readonly dirty = new Set<FieldShape>();
  private readonly touched = new Set<ShapeChange>();
  private baseline: boolean;
  /** Why the run must fail (`on_type_change = "fail"`), once a record says so. */
  failure: string | null = null;

  constructor(
    private readonly def: TableDef,
    private readonly policy: ShapePolicy,
    stored: StoredShape,
    /** The time of the batch being learned (ISO); the tracker moves it on per batch. */
    public at: string,
  ) {
    this.mapping = new Map(def.fields.map((f) => [f.name, f.type]));
    for (const f of stored.fields) {
      const mappedAs = this.mapping.get(f.field) ?? null;
      if (mappedAs !== f.mappedAs) {
        // The column's mapping changed (or the field became mapped): it takes what was seen.
        f.admitted = mappedAs === null ? null : new Set([...f.types].filter((t) => t !== 'null'));
        f.mappedAs = mappedAs;
        this.dirty.add(f);
      }
      if (this.policy.enumFields.has(f.field)) f.enumValues ??= new Set();
      if (f.field === def.key) f.keyFormats ??= new Set();
      this.fields.set(f.field, f);
    }
    for (const c of stored.changes)
      this.remember({
        ...c,
        before: null,
        mapped: false,
        exampleKey: null,
        count: 0,
        lastSeenAt: c.firstSeenAt,
      });
    this.baseline = !stored.fields.some((f) => f.records > 0);
  }

  /**
   * Learns one record (`key` as sent; null when it has none) and says what the policy does with it;
   * undefined for a record the mirror takes as it is. `count` false: a record read again from
   * quarantine, judged but not counted.
   */
  observe(value: object, key: string | null, count = true): ShapeVerdict | undefined {
    const { signatures } = this;
    signatures.hash(value);
    const sig = signatures.find() ?? this.learn(value as Record<string, unknown>, key);
    if (count) {
      sig.count++;
      for (const c of sig.shows) this.show(c, key);
      if (sig.scan !== this.scan) this.markSeen(sig);
    }
    let verdict: ShapeVerdict | undefined;
    if (sig.drifted.length > 0) verdict = this.drift(sig, key);
    if (sig.enums.length > 0)
      verdict = this.values(sig.enums, value as Record<string, unknown>, key, count) ?? verdict;
    if (key !== null) this.keyFormat(key, count);
    return verdict;
  }

  /** What a signature means, worked out once: fields learned, changes found, drifts and enums noted. */
  private learn(value: Record<string, unknown>, key: string | null): Signature {
    const sig: Signature = {
      h2: this.signatures.h2,
      scan: -1,
      count: 0,
      present: [],
      nulls: [],
      drifted: [],
      shows: [],
      enums: [],
    };
    for (const name in value) {
      const type = JSON_TYPES[typeCode(value[name])]!;
      const field = this.field(name, type, key);
      if (!field) continue;
      sig.present.push(field);
      if (type === 'null') sig.nulls.push(field);
      else if (field.enumValues && type === 'string') sig.enums.push(field);
      if (type !== 'null' && field.admitted && !field.admitted.has(type)) {
        // Keys are text whatever their JSON type (12 and "12" are one record): reported, never held back.
        if (name !== this.def.key) sig.drifted.push({ field, type });
        sig.shows.push(this.found(name, 'type-changed', typesText(field.admitted), type, true, key));
      } else if (type !== 'null' && !field.admitted) {
        const change = this.changes.get(changeKey(name, 'type-changed', type));
        if (change) sig.shows.push(change);
      }
      const added = this.added.get(name);
      if (added) sig.shows.push(added);
    }
    this.signatures.add(sig);
    return sig;
  }

  /** The field's shape, learning what this record shows of it (undefined past MAX_FIELDS). */
  private field(name: string, type: JsonType, key: string | null) {
    const { at } = this;
    let field = this.fields.get(name);
    const mapped = this.mapping.has(name);
    if (!field) {
      if (this.fields.size >= MAX_FIELDS) return undefined;
      field = {
        field: name,
        types: new Set([type]),
        admitted: mapped ? new Set(type === 'null' ? [] : [type]) : null,
        mappedAs: this.mapping.get(name) ?? null,
        enumValues: this.policy.enumFields.has(name) ? new Set() : null,
        keyFormats: name === this.def.key ? new Set() : null,
        present: 0,
        nulls: 0,
        records: 0,
        firstSeenAt: at,
        lastSeenAt: at,
        removedAt: null,
      };
      this.fields.set(name, field);
      this.dirty.add(field);
      if (!this.baseline) this.found(name, 'field-added', null, type, mapped, key);
    } else if (field.removedAt !== null) {
      field.removedAt = null;
      this.dirty.add(field);
      if (!this.baseline) this.found(name, 'field-added', 'absent', type, mapped, key);
    }
    if (!field.types.has(type)) {
      field.types.add(type);
      this.dirty.add(field);
      if (type !== 'null') {
        // A mapped field seen only null so far, or any during the baseline: its first values decide.
        if (field.admitted && (field.admitted.size === 0 || this.baseline)) field.admitted.add(type);
        else if (!field.admitted && !this.baseline)
          this.found(
            name,
            'type-changed',
            typesText([...field.types].filter((t) => t !== type)),
            type,
            false,
            key,
          );
      }
    }
    return field;
  }

  /** The change (field, kind, after), recorded once: found now, or known from before. */
  private found(
    field: string,
    kind: ChangeKind,
    before: string | null,
    after: string,
    mapped: boolean,
    key: string | null,
  ): ShapeChange {
    const { at } = this;
    let change = this.changes.get(changeKey(field, kind, after));
    if (!change) {
      change = {
        id: null,
        field,
        kind,
        before,
        after,
        mapped,
        exampleKey: key,
        count: 0,
        firstSeenAt: at,
        lastSeenAt: at,
      };
      this.remember(change);
      this.touched.add(change);
    }
    // A field that comes back is the same appearance again: every record with it shows it.
    if (kind === 'field-added') this.added.set(field, change);
    return change;
  }

  private remember(change: ShapeChange): void {
    this.changes.set(changeKey(change.field, change.kind, change.after), change);
    if (change.kind === 'field-added') this.added.set(change.field, change);
    else if (change.kind === 'new-value') {
      const values = this.newValues.get(change.field) ?? new Map<string, ShapeChange>();
      values.set(change.after, change);
      this.newValues.set(change.field, values);
    } else if (change.kind === 'key-format-changed') this.newFormats.set(change.after, change);
  }

  /** One more record shows `change`. */
  private show(change: ShapeChange, key: string | null): void {
    change.count++;
    change.exampleKey ??= key;
    change.lastSeenAt = this.at;
    this.touched.add(change);
  }

  /** A record whose mapped fields came with types they do not take: the policy's verdict. */
  private drift(sig: Signature, key: string | null): ShapeVerdict | undefined {
    const { onTypeChange } = this.policy;
    if (onTypeChange === 'store')
      return { kind: 'null-columns', fields: sig.drifted.map((d) => d.field.field) };
    const { field, type } = sig.drifted[0]!;
    const reason =
      `${SHAPE_REASON_PREFIX}${field.field} is ${type}, the mirror's column takes ${typesText(field.admitted!)}` +
      ` (sync.schema.on_type_change = "${onTypeChange}")`;
    if (onTypeChange === 'fail')
      this.failure ??= `${this.def.table}: ${field.field} changed type to ${type} in record ${key ?? '(no key)'}; sync.schema.on_type_change = "fail" stops the run`;
    return { kind: 'quarantine', reason };
  }

  /** Enum fields' values: a new one is reported, then stored or quarantined as the policy says. */
  private values(
    enums: FieldShape[],
    value: Record<string, unknown>,
    key: string | null,
    count: boolean,
  ): ShapeVerdict | undefined {
    let verdict: ShapeVerdict | undefined;
    for (const field of enums) {
      const v = value[field.field] as string;
      const values = field.enumValues!;
      if (values.has(v)) {
        // A value reported as new: every record with it shows that change.
        const reported = count ? this.newValues.get(field.field)?.get(v) : undefined;
        if (reported) this.show(reported, key);
        continue;
      }
      if (values.size >= MAX_VALUES) continue;
      if (this.baseline) {
        values.add(v);
        this.dirty.add(field);
        continue;
      }
      const change = this.found(field.field, 'new-value', null, v, this.mapping.has(field.field), key);
      if (count) this.show(change, key);
      if (this.policy.onNewValue === 'store') {
        values.add(v);
        this.dirty.add(field);
      } else {
        verdict ??= {
          kind: 'quarantine',
          reason: `${SHAPE_REASON_PREFIX}${field.field} = ${JSON.stringify(v)} was never seen before (sync.schema.on_new_value = "quarantine")`,
        };
      }
    }
    return verdict;
  }

  /** The key's format: a new one is reported (keys stay text: nothing is quarantined for it). */
  private keyFormat(key: string, count: boolean): void {
    const field = this.fields.get(this.def.key);
    if (!field?.keyFormats) return;
    const format = keyFormat(key);
    if (field.keyFormats.has(format)) {
      const reported = count && this.newFormats.size > 0 ? this.newFormats.get(format) : undefined;
      if (reported) this.show(reported, key);
      return;
    }
    const before = [...field.keyFormats].sort().join('|');
    field.keyFormats.add(format);
    this.dirty.add(field);
    if (!this.baseline && before !== '') {
      const change = this.found(this.def.key, 'key-format-changed', before, format, true, key);
      if (count) this.show(change, key);
    }
  }

  /**
   * A scan begins (fresh or resumed): the fields its records show are marked seen anew, so a field
   * is gone at its end only if no record of it had it (records re-applied from quarantine before
   * it do not count: they are not the scan's).
   */
  beginScan(): void {
    this.scan++;
    this.seenThisScan.clear();
  }

  /** The fields of a signature's record are seen in this scan: their last sight is now. */
  private markSeen(sig: Signature): void {
    sig.scan = this.scan;
    for (const field of sig.present) {
      if (this.seenThisScan.has(field.field)) continue;
      this.seenThisScan.add(field.field);
      field.lastSeenAt = this.at;
      this.dirty.add(field);
    }
  }

  /**
   * A complete scan ended (it started at `scanStartedAt`): fields no record of it had are removed,
   * and every field's counts are this run's. Not during the baseline, which this ends.
   */
  complete(scanStartedAt: string): void {
    const { at } = this;
    let records = 0;
    const present = new Map<FieldShape, number>();
    const nulls = new Map<FieldShape, number>();
    for (const sig of this.signatures.all()) {
      records += sig.count;
      for (const f of sig.present) present.set(f, (present.get(f) ?? 0) + sig.count);
      for (const f of sig.nulls) nulls.set(f, (nulls.get(f) ?? 0) + sig.count);
    }
    for (const field of this.fields.values()) {
      if (!this.baseline && field.removedAt === null && field.lastSeenAt < scanStartedAt) {
        field.removedAt = at;
        const change = this.found(
          field.field,
          'field-removed',
          typesText(field.types),
          'absent',
          field.admitted !== null,
          null,
        );
        change.count += records;
        change.lastSeenAt = at;
        this.touched.add(change);
      }
      field.present = present.get(field) ?? 0;
      field.nulls = nulls.get(field) ?? 0;
      field.records = records;
      this.dirty.add(field);
    }
    if (records > 0) this.baseline = false;
  }

  /** Fields and changes to write since the last call (the store writes them with the batch). */
  drain(): { fields: FieldShape[]; changes: ShapeChange[] } {
    const out = { fields: [...this.dirty], changes: [...this.touched] };
    this.dirty.clear();
    this.touched.clear();
    return out;
  }

  /** A change written: its id (new ones get theirs from the insert), and its count starts again. */
  written(change: ShapeChange, id: number): void {
    change.id = id;
    change.count = 0;
  }
}
