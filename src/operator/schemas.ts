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

function keyOf(value: unknown, keyField: string): string | null {
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

/**
 * Checks one record against its resource's schema and turns it into column values.
 * A record that fails is returned with the field and the reason, never dropped silently.
 */
export function normalizeRecord(resource: ResourceName, value: unknown, rawText?: string): NormalizeResult {
  const { fields, key: keyField } = RESOURCE_FIELDS[resource];
  const raw = rawText ?? JSON.stringify(value) ?? 'null';
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, key: null, reason: 'record is not a JSON object', raw };
  }
  const result = SCHEMAS[resource].safeParse(withLegacyNames(value as Record<string, unknown>));
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const field = issue.path.join('.') || '(record)';
    const reason =
      issue.path[0] === keyField && issue.code === 'invalid_union'
        ? `${field}: missing or not an id`
        : `${field}: ${issue.message}`;
    return { ok: false, key: keyOf(value, keyField), reason, raw };
  }
  const data = result.data as Record<string, string | number | null | undefined>;
  const values = fields.map((f) => data[f.name] ?? null);
  return { ok: true, record: { key: String(data[keyField]), values, raw } };
}
