/**
 * Schema drift on demand (issue 28): a resource-level transform of every record the simulator
 * serves for a resource (its list and its custody read), so a test or the demo can say "from now
 * on": a field appears or disappears, changes JSON type, an enum field takes a value never sent
 * before, the keys change format. The registry keeps its records as they were; only what is served
 * changes, so clearing the drift gives the old shape back.
 *
 * A drift may wait for the next N list requests of its resource (`afterRequests`): those are
 * served in the old shape, the ones after in the new (a run that sees page 1 old and page 3 new).
 * A request refused before its records are read (auth, a bad `limit`, a status or reset fault)
 * is not counted; the custody reads never are (they see a drift once it is in effect).
 * Which records a `share` picks is a pure function of the record's key and the change, so the same
 * record is picked on every request, and a drifted key is one per record and format.
 */
import { z } from 'zod';
import { hash3, mix32 } from './prng.js';
import { ID_FIELD, type JsonObject, RESOURCES, type ResourceName } from './types.js';

const field = z.string().min(1).max(200);
/** Share of the records a change applies to, picked by key (default: 1, every record). */
const share = z.number().min(0).max(1).optional();

export const driftChangeSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('add-field'),
    field,
    /** The value every picked record gets (default: null, unless `valueFrom` says otherwise). */
    value: z.json().optional(),
    /** `key`: each record gets its own key as text (a value per record). */
    valueFrom: z.literal('key').optional(),
    share,
  }),
  z.strictObject({ kind: z.literal('drop-field'), field, share }),
  z.strictObject({
    kind: z.literal('change-type'),
    field,
    /** string: the same number as text; number: a number text as a number; object: `{ "value": v }`. */
    to: z.enum(['string', 'number', 'object']),
    share,
  }),
  z.strictObject({ kind: z.literal('new-value'), field, value: z.json(), share }),
  z.strictObject({
    kind: z.literal('key-format'),
    /** prefixed: `"<prefix><n>"` (P-, I-, U- by resource unless `prefix`); uuid: a UUID per record. */
    format: z.enum(['prefixed', 'uuid']),
    prefix: z.string().min(1).max(20).optional(),
  }),
]);

export const driftSpecSchema = z.strictObject({
  resource: z.enum(RESOURCES),
  changes: z.array(driftChangeSchema).min(1).max(32),
  /** List requests of the resource still served in the old shape (default: 0, from now on). */
  afterRequests: z.number().int().nonnegative().optional(),
});

export type DriftChange = z.infer<typeof driftChangeSchema>;
export type DriftSpec = z.infer<typeof driftSpecSchema>;

/** A drift as GET /_sim/drift shows it. */
export interface DriftView {
  id: number;
  resource: ResourceName;
  changes: DriftChange[];
  /** List requests still to be served in the old shape; 0: in effect. */
  afterRequests: number;
  active: boolean;
}

const DEFAULT_PREFIX: Record<ResourceName, string> = { projects: 'P-', issuances: 'I-', units: 'U-' };
const RESOURCE_SALT: Record<ResourceName, number> = { projects: 11, issuances: 13, units: 17 };

/** Drifts kept at most: a client looping on POST /_sim/drift cannot grow memory without bound. */
const MAX_DRIFTS = 64;

/** A stable number in [0, 1) for (record key, change): which records a share picks. */
function pickOf(key: number, salt: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < salt.length; i++) h = Math.imul(h ^ salt.charCodeAt(i), 16777619);
  return mix32(h ^ mix32(key >>> 0) ^ Math.floor(key / 0x1_0000_0000)) / 0x1_0000_0000;
}

/** A UUID (version 4 layout) that is a pure function of the resource and the record's key. */
export function uuidOfKey(resource: ResourceName, key: number): string {
  const salt = RESOURCE_SALT[resource];
  const hex = [0, 1, 2, 3].map((i) => hash3(salt, key, i).toString(16).padStart(8, '0')).join('');
  const variant = ((Number.parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/** The value `v` given another JSON type; absent and null stay as they are. */
function retype(v: unknown, to: 'string' | 'number' | 'object', key: number): unknown {
  if (v === null || v === undefined) return v;
  if (to === 'object') return { value: v };
  if (to === 'string')
    return typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  // A text that is not a number becomes the record's key: still a number, still stable.
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : Number.NaN;
  return Number.isFinite(n) ? n : key;
}

/** The served id of a record whose numeric key is `key` under a key-format change. */
export function servedKey(resource: ResourceName, key: number, change: DriftChange & { kind: 'key-format' }) {
  return change.format === 'uuid'
    ? uuidOfKey(resource, key)
    : `${change.prefix ?? DEFAULT_PREFIX[resource]}${key}`;
}

/** One change applied to a copy of the record (pure; `out` is the caller's copy). */
function applyChange(resource: ResourceName, out: JsonObject, key: number, change: DriftChange): void {
  if (change.kind === 'key-format') {
    out[ID_FIELD[resource]] = servedKey(resource, key, change);
    return;
  }
  if (change.share !== undefined && pickOf(key, `${change.kind}:${change.field}`) >= change.share) return;
  switch (change.kind) {
    case 'add-field':
      out[change.field] = change.valueFrom === 'key' ? String(key) : (change.value ?? null);
      return;
    case 'drop-field':
      delete out[change.field];
      return;
    case 'change-type':
      if (change.field in out) out[change.field] = retype(out[change.field], change.to, key);
      return;
    case 'new-value':
      out[change.field] = change.value;
      return;
  }
}

interface Drift {
  id: number;
  resource: ResourceName;
  changes: DriftChange[];
  afterRequests: number;
}

/** The drifts of every resource: added, counted down by list requests, applied to served records. */
export class DriftControl {
  private drifts: Drift[] = [];
  private nextId = 1;

  /** Adds a drift (validated); returns its view. Throws a ZodError on a bad spec. */
  add(spec: DriftSpec): DriftView {
    const parsed = driftSpecSchema.parse(spec);
    if (this.drifts.length >= MAX_DRIFTS) this.drifts.shift();
    const drift: Drift = {
      id: this.nextId++,
      resource: parsed.resource,
      changes: parsed.changes,
      afterRequests: parsed.afterRequests ?? 0,
    };
    this.drifts.push(drift);
    return view(drift);
  }

  /** Removes the drifts of `resource` (every resource's when omitted): records are served as stored. */
  clear(resource?: ResourceName): void {
    this.drifts = resource === undefined ? [] : this.drifts.filter((d) => d.resource !== resource);
  }

  list(): DriftView[] {
    return this.drifts.map(view);
  }

  /** Whether any drift of the resource is in effect (the cheap test before copying records). */
  active(resource: ResourceName): boolean {
    return this.drifts.some((d) => d.resource === resource && d.afterRequests === 0);
  }

  /**
   * A list request of `resource` arrives: the drifts in effect for it are returned (it is served
   * with them), then the waiting ones count it.
   */
  listRequest(resource: ResourceName): DriftChange[] {
    const changes = this.changes(resource);
    for (const d of this.drifts) if (d.resource === resource && d.afterRequests > 0) d.afterRequests--;
    return changes;
  }

  /** The changes in effect for `resource`, in the order their drifts were added. */
  changes(resource: ResourceName): DriftChange[] {
    return this.drifts
      .filter((d) => d.resource === resource && d.afterRequests === 0)
      .flatMap((d) => d.changes);
  }

  /** The record as served under `changes` (the same object when there are none). */
  apply(
    resource: ResourceName,
    record: JsonObject,
    key: number,
    changes: readonly DriftChange[],
  ): JsonObject {
    if (changes.length === 0) return record;
    const out = { ...record };
    for (const c of changes) applyChange(resource, out, key, c);
    return out;
  }

  /** The numeric key a served id stands for under the key formats in effect (undefined: none). */
  keyOfServed(resource: ResourceName, id: string, candidates: Iterable<number>): number | undefined {
    for (const c of this.changes(resource)) {
      if (c.kind !== 'key-format') continue;
      for (const key of candidates) if (servedKey(resource, key, c) === id) return key;
    }
    return undefined;
  }
}

function view(d: Drift): DriftView {
  return {
    id: d.id,
    resource: d.resource,
    changes: d.changes,
    afterRequests: d.afterRequests,
    active: d.afterRequests === 0,
  };
}
