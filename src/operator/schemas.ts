import { z } from 'zod';
import {
  type FieldDef,
  type FieldType,
  LEGACY_FIELD_NAMES,
  RESOURCE_FIELDS,
  type ResourceName,
} from './fields.js';

/**
 * zod schemas for the interface's records, derived from the field lists in fields.ts.
 * Open by design: unknown fields pass (they are kept in `_raw`), enumerations are plain strings,
 * missing fields are null. What is checked is what a column needs: types, dates, and a key.
 */

const DATE = /^(\d{4})-(\d{2})-(\d{2})([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/;

function isRealDate(value: string): boolean {
  const m = DATE.exec(value);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(Date.UTC(y, mo - 1, d));
  return date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
}

const numeric = z.union([
  z.number().refine(Number.isFinite, 'expected a finite number'),
  z
    .string()
    .trim()
    .regex(/^-?\d+(\.\d+)?([eE][+-]?\d+)?$/, 'expected a number')
    .transform(Number),
]);

const FIELD_SCHEMAS: Record<FieldType, z.ZodType> = {
  // Keys are TEXT: 12 and "12" are the same record.
  id: z.union([z.string().trim().min(1, 'expected a non-empty id'), z.number().int()]).transform(String),
  text: z.union([z.string(), z.number().transform(String)]).nullish(),
  int: numeric.refine(Number.isInteger, 'expected an integer').nullish(),
  number: numeric.nullish(),
  bool: z
    .union([
      z.boolean(),
      z.enum(['true', 'false']).transform((v) => v === 'true'),
      z.literal(0),
      z.literal(1),
    ])
    .transform((v) => (v === true || v === 1 ? 1 : 0))
    .nullish(),
  date: z.string().refine(isRealDate, 'expected a date YYYY-MM-DD').nullish(),
  textList: z
    .union([z.array(z.union([z.string(), z.number().transform(String)])), z.string().transform((s) => [s])])
    .transform((list) => JSON.stringify(list))
    .nullish(),
};

function recordSchema(fields: readonly FieldDef[]) {
  const shape: Record<string, z.ZodType> = {};
  for (const field of fields) shape[field.name] = FIELD_SCHEMAS[field.type];
  return z.looseObject(shape);
}

/** One schema per interface record (Project 2.2, Issuance 2.3, Unit operation 2.4). */
export const projectSchema = recordSchema(RESOURCE_FIELDS.projects.fields);
export const issuanceSchema = recordSchema(RESOURCE_FIELDS.issuances.fields);
export const unitOperationSchema = recordSchema(RESOURCE_FIELDS.unit_operations.fields);

const SCHEMAS: Record<ResourceName, z.ZodType> = {
  projects: projectSchema,
  issuances: issuanceSchema,
  unit_operations: unitOperationSchema,
  custody_projects: projectSchema,
  custody_issuances: issuanceSchema,
  custody_units: unitOperationSchema,
};

/** A record ready for its mirror row. */
export interface NormalizedRecord {
  /** The key, as text. */
  key: string;
  /** One value per interface field, in the order of the field list; null where absent. */
  values: (string | number | null)[];
  /** The record's JSON as received, unknown fields kept. */
  raw: string;
}

export type NormalizeResult =
  | { ok: true; record: NormalizedRecord }
  | { ok: false; key: string | null; reason: string; raw: string };

/**
 * The key of a raw record as text (`12` and `"12"` are the same record), or null when it has none
 * usable: what the mirror keys rows by before (and without) validating the record.
 */
export function recordKey(value: unknown, keyField: string): string | null {
  if (value && typeof value === 'object') {
    const key = (value as Record<string, unknown>)[keyField];
    if (typeof key === 'string' || typeof key === 'number') return String(key);
  }
  return null;
}

function withLegacyNames(value: Record<string, unknown>): Record<string, unknown> {
  let out = value;
  for (const [legacy, current] of Object.entries(LEGACY_FIELD_NAMES)) {
    if (legacy in value && value[current] === undefined) {
      if (out === value) out = { ...value };
      out[current] = value[legacy];
    }
  }
  return out;
}

/** What a fast-path field reader answers when it cannot vouch for a value: zod decides instead. */
const DEFER: unique symbol = Symbol('defer to zod');
type FastValue = string | number | null | typeof DEFER;

/**
 * Per field type, the well-formed common case read without zod, giving exactly the value zod's
 * schema gives; anything else (numeric strings, "true", numbers in lists, bad values) is DEFERred
 * to zod, which normalizes it or names the problem. test/operator/fastPath.test.ts checks the
 * equivalence property.
 */
const FAST_FIELDS: Record<FieldType, (v: unknown) => FastValue> = {
  id: (v) =>
    typeof v === 'string'
      ? v.length > 0 && v.trim() === v
        ? v
        : DEFER
      : // zod's .int() takes safe integers only.
        typeof v === 'number' && Number.isSafeInteger(v)
        ? String(v)
        : DEFER,
  text: (v) =>
    v == null
      ? null
      : typeof v === 'string'
        ? v
        : typeof v === 'number' && Number.isFinite(v)
          ? String(v)
          : DEFER,
  int: (v) => (v == null ? null : typeof v === 'number' && Number.isInteger(v) ? v : DEFER),
  number: (v) => (v == null ? null : typeof v === 'number' && Number.isFinite(v) ? v : DEFER),
  bool: (v) => (v == null ? null : v === true || v === 1 ? 1 : v === false || v === 0 ? 0 : DEFER),
  date: (v) => (v == null ? null : typeof v === 'string' && isRealDate(v) ? v : DEFER),
  textList: (v) => {
    if (v == null) return null;
    if (typeof v === 'string') return JSON.stringify([v]);
    if (!Array.isArray(v)) return DEFER;
    for (const item of v) if (typeof item !== 'string') return DEFER;
    return JSON.stringify(v);
  },
};

type FastReader = (record: Record<string, unknown>) => (string | number | null)[] | null;

function fastReader(fields: readonly FieldDef[]): FastReader {
  const readers = fields.map((f) => FAST_FIELDS[f.type]);
  const names = fields.map((f) => f.name);
  return (record) => {
    const values: (string | number | null)[] = new Array(names.length);
    for (let i = 0; i < names.length; i++) {
      const v = readers[i]!(record[names[i]!]);
      if (v === DEFER) return null;
      values[i] = v;
    }
    return values;
  };
}

const FAST_READERS: Record<ResourceName, FastReader> = {
  projects: fastReader(RESOURCE_FIELDS.projects.fields),
  issuances: fastReader(RESOURCE_FIELDS.issuances.fields),
  unit_operations: fastReader(RESOURCE_FIELDS.unit_operations.fields),
  custody_projects: fastReader(RESOURCE_FIELDS.custody_projects.fields),
  custody_issuances: fastReader(RESOURCE_FIELDS.custody_issuances.fields),
  custody_units: fastReader(RESOURCE_FIELDS.custody_units.fields),
};

const RESOURCE_KEY_INDEX = Object.fromEntries(
  Object.entries(RESOURCE_FIELDS).map(([name, r]) => [name, r.fields.findIndex((f) => f.name === r.key)]),
) as Record<ResourceName, number>;

/**
 * The fast path alone: column values for a well-formed record, or null when zod must decide
 * (exported for the equivalence test).
 */
export function fastNormalize(resource: ResourceName, value: unknown): NormalizedRecord | null {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return null;
  const values = FAST_READERS[resource](withLegacyNames(value as Record<string, unknown>));
  if (values === null) return null;
  const keyIndex = RESOURCE_KEY_INDEX[resource];
  return { key: String(values[keyIndex]), values, raw: '' };
}

/**
 * Checks one record against its resource's schema and turns it into column values.
 * A record that fails is returned with the field and the reason, never dropped silently.
 * Well-formed records take a compiled fast path (~10x cheaper than zod); zod reads the rest.
 */
export function normalizeRecord(resource: ResourceName, value: unknown, rawText?: string): NormalizeResult {
  const { fields, key: keyField } = RESOURCE_FIELDS[resource];
  const raw = rawText ?? JSON.stringify(value) ?? 'null';
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, key: null, reason: 'record is not a JSON object', raw };
  }
  const fast = fastNormalize(resource, value);
  if (fast) return { ok: true, record: { key: fast.key, values: fast.values, raw } };
  const result = SCHEMAS[resource].safeParse(withLegacyNames(value as Record<string, unknown>));
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const field = issue.path.join('.') || '(record)';
    const reason =
      issue.path[0] === keyField && issue.code === 'invalid_union'
        ? `${field}: missing or not an id`
        : `${field}: ${issue.message}`;
    return { ok: false, key: recordKey(value, keyField), reason, raw };
  }
  const data = result.data as Record<string, string | number | null | undefined>;
  const values = fields.map((f) => data[f.name] ?? null);
  return { ok: true, record: { key: String(data[keyField]), values, raw } };
}
