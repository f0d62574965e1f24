/**
 * The simulated operator's data: three overlay sequences (projects, issuances, unit operations)
 * deterministic from the seed, plus the marketplace's custody set. Tests mutate it in-process;
 * child processes mutate it through the /_sim admin endpoints, which call the same methods.
 */
import { z } from 'zod';
import { type DriftChange, DriftControl, type DriftSpec, type DriftView } from './drift.js';
import { GENERATORS, type GenContext, KEY_SPECS } from './generate.js';
import { OverlaySequence } from './sequence.js';
import { ID_FIELD, type JsonObject, RESOURCES, type ResourceName } from './types.js';

export interface RegistryOptions {
  /** Seed of every generated value (default: 1) */
  seed?: number;
  /** Generated projects (default: 20) */
  projects?: number;
  /** Generated issuances (default: 60) */
  issuances?: number;
  /** Generated unit operations; costs no memory until served (default: 300) */
  units?: number;
  /** Ids in the marketplace's custody (default: first 3 projects, first 5 issuances, first 10 units) */
  custody?: { projects?: (string | number)[]; issuances?: (string | number)[]; units?: (string | number)[] };
}

export type RegistryErrorCode = 'invalid' | 'exists' | 'not-found';

/** A refused registry mutation; admin endpoints map the code to 400/409/404. */
export class RegistryError extends Error {
  constructor(
    readonly code: RegistryErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'RegistryError';
  }
}

export class Registry {
  readonly ctx: GenContext;
  private readonly seqs: Record<ResourceName, OverlaySequence>;
  private readonly custodyKeys: Record<ResourceName, Set<number>>;
  /** Schema drift of what is served (drift.ts); the records above stay as stored. */
  readonly drifts = new DriftControl();

  constructor(opts: RegistryOptions = {}) {
    this.ctx = {
      seed: opts.seed ?? 1,
      projects: opts.projects ?? 20,
      issuances: opts.issuances ?? 60,
      units: opts.units ?? 300,
    };
    const ctx = this.ctx;
    const seq = (r: ResourceName, n: number) =>
      new OverlaySequence(KEY_SPECS[r], (i) => GENERATORS[r](ctx, i), n);
    this.seqs = {
      projects: seq('projects', ctx.projects),
      issuances: seq('issuances', ctx.issuances),
      units: seq('units', ctx.units),
    };
    const firstIds = (r: ResourceName, n: number) =>
      Array.from({ length: Math.min(n, ctx[r]) }, (_, i) => KEY_SPECS[r].baseKey(i));
    this.custodyKeys = {
      projects: new Set(this.keysOf('projects', opts.custody?.projects) ?? firstIds('projects', 3)),
      issuances: new Set(this.keysOf('issuances', opts.custody?.issuances) ?? firstIds('issuances', 5)),
      units: new Set(this.keysOf('units', opts.custody?.units) ?? firstIds('units', 10)),
    };
  }

  private keysOf(r: ResourceName, ids: (string | number)[] | undefined): number[] | undefined {
    return ids?.map((id) => this.keyOf(r, id));
  }

  /** Numeric key of an id; throws RegistryError('invalid') when the id is not numeric. */
  keyOf(resource: ResourceName, id: unknown): number {
    const key = KEY_SPECS[resource].keyOfId(id);
    if (key === undefined) {
      throw new RegistryError(
        'invalid',
        `${ID_FIELD[resource]} must be a non-negative integer or digit string`,
      );
    }
    return key;
  }

  /** The id value for a key, typed as the interface types it. */
  idOf(resource: ResourceName, key: number): number | string {
    return KEY_SPECS[resource].idOfKey(key);
  }

  count(resource: ResourceName): number {
    return this.seqs[resource].size;
  }

  get(resource: ResourceName, id: string | number): JsonObject | undefined {
    const key = KEY_SPECS[resource].keyOfId(id);
    return key === undefined ? undefined : this.seqs[resource].get(key);
  }

  /** Adds a record; its id field decides where it sorts. Missing fields are not filled in. */
  add(resource: ResourceName, record: JsonObject): JsonObject {
    const key = this.keyOf(resource, record[ID_FIELD[resource]]);
    const stored = { ...record, [ID_FIELD[resource]]: this.idOf(resource, key) };
    if (!this.seqs[resource].add(key, stored)) {
      throw new RegistryError(
        'exists',
        `${resource} record ${String(this.idOf(resource, key))} already exists`,
      );
    }
    return stored;
  }

  /** Changes fields of a live record (the id field cannot change). Returns the new record. */
  change(resource: ResourceName, id: string | number, patch: JsonObject): JsonObject {
    const key = this.keyOf(resource, id);
    const current = this.seqs[resource].get(key);
    if (!current) throw new RegistryError('not-found', `no ${resource} record ${String(id)}`);
    const next = { ...current, ...patch, [ID_FIELD[resource]]: current[ID_FIELD[resource]] };
    this.seqs[resource].replace(key, next);
    return next;
  }

  remove(resource: ResourceName, id: string | number): void {
    if (!this.seqs[resource].remove(this.keyOf(resource, id))) {
      throw new RegistryError('not-found', `no ${resource} record ${String(id)}`);
    }
  }

  /**
   * Appends n new unit operations at the end of the log (ids above every existing one).
   * Cheap for any n: it grows the generated base unless a hand-added record sits past it.
   */
  appendUnits(n: number): { count: number; firstId?: string; lastId?: string } {
    if (!Number.isSafeInteger(n) || n < 0)
      throw new RegistryError('invalid', 'count must be a non-negative integer');
    if (n === 0) return { count: 0 };
    const seq = this.seqs.units;
    const spec = KEY_SPECS.units;
    if (seq.growBase(n)) {
      const first = seq.baseSize - n;
      return {
        count: n,
        firstId: String(spec.baseKey(first)),
        lastId: String(spec.baseKey(seq.baseSize - 1)),
      };
    }
    let key = (seq.maxKey() ?? spec.baseKey(0)) + 1;
    const firstId = String(key);
    for (let k = 0; k < n; k++, key++) seq.add(key, this.synthesize('units', key));
    return { count: n, firstId, lastId: String(key - 1) };
  }

  /** A plausible new record for a key that has no generated one (drift inserts, appends). */
  synthesize(resource: ResourceName, key: number): JsonObject {
    const spec = KEY_SPECS[resource];
    const index = Math.max(0, Math.floor((key - spec.baseKey(0)) / (spec.baseKey(1) - spec.baseKey(0))));
    const rec: JsonObject = {
      ...GENERATORS[resource](this.ctx, index),
      [ID_FIELD[resource]]: spec.idOfKey(key),
    };
    return rec;
  }

  /** Live records from position `from` on, in order (a generator: nothing is built up front). */
  *iterate(resource: ResourceName, from = 0): Generator<JsonObject> {
    for (const e of this.seqs[resource].entries(from)) yield e.record;
  }

  /** All live records of every resource as an id → record map; for small registries in tests. */
  snapshot(resource: ResourceName): Map<string, JsonObject> {
    const out = new Map<string, JsonObject>();
    for (const r of this.iterate(resource)) out.set(String(r[ID_FIELD[resource]]), r);
    return out;
  }

  /** One page; a filter makes it a scan over the whole resource (fine at the sizes filters see). */
  page(
    resource: ResourceName,
    offset: number,
    limit: number,
    filter?: (r: JsonObject) => boolean,
  ): JsonObject[] {
    const out: JsonObject[] = [];
    if (limit <= 0) return out;
    if (!filter) {
      for (const r of this.iterate(resource, offset)) {
        out.push(r);
        if (out.length >= limit) break;
      }
      return out;
    }
    let skipped = 0;
    for (const r of this.iterate(resource)) {
      if (!filter(r)) continue;
      if (skipped++ < offset) continue;
      out.push(r);
      if (out.length >= limit) break;
    }
    return out;
  }

  /**
   * Inserts up to n synthesized records at positions <= p (at p while the neighbouring keys leave
   * a gap, else a little earlier), so the record that was at p ends up at p + n.
   */
  insertBefore(resource: ResourceName, p: number, n: number): (string | number)[] {
    const seq = this.seqs[resource];
    const ids: (string | number)[] = [];
    while (ids.length < n) {
      let key: number | undefined;
      for (let q = Math.min(p, seq.size); q >= Math.max(0, p - 64) && key === undefined; q--)
        key = seq.freeKeyBefore(q);
      if (key === undefined) break;
      seq.add(key, this.synthesize(resource, key));
      ids.push(this.idOf(resource, key));
    }
    return ids;
  }

  /** Removes up to n live records just before position p; returns the ids removed. */
  removeBefore(resource: ResourceName, p: number, n: number): (string | number)[] {
    const seq = this.seqs[resource];
    const ids: (string | number)[] = [];
    for (let pos = Math.min(p, seq.size) - 1; pos >= 0 && ids.length < n; pos--) {
      const key = seq.keyAt(pos);
      if (key === undefined) break;
      seq.remove(key);
      ids.push(this.idOf(resource, key));
    }
    return ids;
  }

  inCustody(resource: ResourceName, id: string | number): boolean {
    const key = KEY_SPECS[resource].keyOfId(id);
    return key !== undefined && this.custodyKeys[resource].has(key) && this.seqs[resource].has(key);
  }

  /** Puts ids into custody (a deposit). */
  addToCustody(resource: ResourceName, ids: readonly (string | number)[]): void {
    for (const id of ids) this.custodyKeys[resource].add(this.keyOf(resource, id));
  }

  removeFromCustody(resource: ResourceName, ids: readonly (string | number)[]): void {
    for (const id of ids) this.custodyKeys[resource].delete(this.keyOf(resource, id));
  }

  custodyIds(resource: ResourceName): (string | number)[] {
    return [...this.custodyKeys[resource]].sort((a, b) => a - b).map((k) => this.idOf(resource, k));
  }

  /**
   * From now on (or after the next `afterRequests` list requests of the resource), every record
   * served for `spec.resource` goes through `spec.changes`. Throws RegistryError('invalid') on a bad spec.
   */
  drift(spec: DriftSpec): DriftView {
    try {
      return this.drifts.add(spec);
    } catch (err) {
      if (err instanceof z.ZodError) throw new RegistryError('invalid', z.prettifyError(err));
      throw err;
    }
  }

  /** Ends the drift of `resource` (of every resource when omitted). */
  clearDrift(resource?: ResourceName): void {
    this.drifts.clear(resource);
  }

  /** A stored record as served under `changes` (default: the drifts in effect now). */
  served(
    resource: ResourceName,
    record: JsonObject,
    changes: readonly DriftChange[] = this.drifts.changes(resource),
  ): JsonObject {
    if (changes.length === 0) return record;
    const key = KEY_SPECS[resource].keyOfId(record[ID_FIELD[resource]]) ?? 0;
    return this.drifts.apply(resource, record, key, changes);
  }

  /** Live records as served now (drifts in effect applied), by served id; for tests' expectations. */
  servedSnapshot(resource: ResourceName): Map<string, JsonObject> {
    const changes = this.drifts.changes(resource);
    const out = new Map<string, JsonObject>();
    for (const r of this.iterate(resource)) {
      const s = this.served(resource, r, changes);
      out.set(String(s[ID_FIELD[resource]]), s);
    }
    return out;
  }

  /** The stored id of a custody id as served: itself, or the custody record a key-format drift renamed so. */
  storedId(resource: ResourceName, id: string): string | number {
    if (KEY_SPECS[resource].keyOfId(id) !== undefined) return id;
    const key = this.drifts.keyOfServed(resource, id, this.custodyKeys[resource]);
    return key === undefined ? id : this.idOf(resource, key);
  }

  counts(): Record<ResourceName, number> {
    const out = { projects: 0, issuances: 0, units: 0 };
    for (const r of RESOURCES) out[r] = this.count(r);
    return out;
  }
}
