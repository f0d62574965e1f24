/**
 * The words of the learned shape (issue 28): JSON types, change kinds, what is known of a field and
 * of a change, and the policy's verdict on a record. Pure; learner.ts learns them, tracker.ts and
 * statements.ts store them.
 */

/** A JSON value's type. */
export type JsonType = 'null' | 'string' | 'number' | 'boolean' | 'object' | 'array';
export const JSON_TYPES: readonly JsonType[] = ['null', 'string', 'number', 'boolean', 'object', 'array'];

export function typeCode(v: unknown): number {
  switch (typeof v) {
    case 'string':
      return 1;
    case 'number':
      return 2;
    case 'boolean':
      return 3;
    case 'object':
      return v === null ? 0 : Array.isArray(v) ? 5 : 4;
    default:
      return 0;
  }
}

export const CHANGE_KINDS = [
  'field-added',
  'field-removed',
  'type-changed',
  'new-value',
  'key-format-changed',
] as const;
export type ChangeKind = (typeof CHANGE_KINDS)[number];

/** A record key's format: digits only, a UUID, or any other text. */
export function keyFormat(key: string): 'integer' | 'uuid' | 'text' {
  if (allDigits(key)) return 'integer';
  if (key.length === 36 && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(key))
    return 'uuid';
  return 'text';
}

function allDigits(key: string): boolean {
  if (key.length === 0) return false;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** What is known of one field. */
export interface FieldShape {
  field: string;
  types: Set<JsonType>;
  /** Mapped to a column: the types taken there (null: kept in `_raw` only). */
  admitted: Set<JsonType> | null;
  mappedAs: string | null;
  enumValues: Set<string> | null;
  keyFormats: Set<string> | null;
  present: number;
  nulls: number;
  records: number;
  firstSeenAt: string;
  lastSeenAt: string;
  removedAt: string | null;
}

/** One change, as found (no id yet) or as known from earlier runs. */
export interface ShapeChange {
  id: number | null;
  field: string;
  kind: ChangeKind;
  before: string | null;
  after: string;
  mapped: boolean;
  exampleKey: string | null;
  /** Records that showed it since it was last written. */
  count: number;
  firstSeenAt: string;
  lastSeenAt: string;
}

/** What the policy says of one record: quarantined with a reason, or some columns left null. */
export type ShapeVerdict =
  | { kind: 'quarantine'; reason: string }
  | { kind: 'null-columns'; fields: string[] };

/** What earlier runs learned of a resource (shape/tracker.ts reads it). */
export interface StoredShape {
  fields: FieldShape[];
  changes: Pick<ShapeChange, 'id' | 'field' | 'kind' | 'after' | 'firstSeenAt'>[];
}

/** The key of a change: one per field, kind and what it became. */
export const changeKey = (field: string, kind: ChangeKind, after: string) =>
  `${field}\u0000${kind}\u0000${after}`;
export const typesText = (types: Iterable<JsonType>) =>
  [...types]
    .filter((t) => t !== 'null')
    .sort()
    .join('|') || 'null';

/** Fields learned at most per resource: an upstream sending random keys cannot grow memory without bound. */
export const MAX_FIELDS = 500;

/** What one signature of records means, worked out once (learner.ts; kept by signatures.ts). */
export interface Signature {
  h2: number;
  /** The scan whose seen fields it last marked. */
  scan: number;
  /** Records with it this run (their fields' present and null counts are derived at the end). */
  count: number;
  present: FieldShape[];
  nulls: FieldShape[];
  /** Mapped fields with a type they do not take, and that type. */
  drifted: { field: FieldShape; type: JsonType }[];
  /** Changes every record with this signature shows. */
  shows: ShapeChange[];
  /** Enum fields holding a string. */
  enums: FieldShape[];
}
