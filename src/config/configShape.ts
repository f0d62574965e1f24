import { z } from 'zod';
import { positiveInt } from './configPrimitives.js';

/**
 * `[sync.schema]`: what the mirror does when the operator's records change shape (issue 28,
 * src/mirror/shape/). Every change is recorded and reported whatever the policy; the policy says
 * what becomes of the records that show it.
 */

/** `on_type_change`: a field mapped to a column arrives with another JSON type. */
export const TYPE_CHANGE_POLICIES = ['quarantine', 'store', 'fail'] as const;
/** `on_new_value`: an enum-like field takes a value never seen before. */
export const NEW_VALUE_POLICIES = ['store', 'quarantine'] as const;

/** The tables whose shape is learned (the mirror's resources, named as their tables). */
export const SHAPE_TABLES = [
  'projects',
  'issuances',
  'unit_operations',
  'custody_projects',
  'custody_issuances',
  'custody_units',
] as const;

const overrideSchema = z.strictObject({
  /** This table's `on_type_change` (default: the `[sync.schema]` one). */
  on_type_change: z.enum(TYPE_CHANGE_POLICIES).optional(),
  /** This table's `on_new_value` (default: the `[sync.schema]` one). */
  on_new_value: z.enum(NEW_VALUE_POLICIES).optional(),
});

export const schemaDriftSchema = z.strictObject({
  /** Learn the records' shape and report its changes; off, nothing is learned, judged or reported (default: true). */
  learn: z.boolean().default(true),
  /**
   * A field mapped to a column arrives with another JSON type: "quarantine" the record with the reason
   * (re-applied once the policy or the mapping changes), "store" it with that column left null (the
   * value stays in `_raw`), or "fail" the run (default: "quarantine").
   */
  on_type_change: z.enum(TYPE_CHANGE_POLICIES).default('quarantine'),
  /** An enum-like field takes a value never seen: "store" and report it, or "quarantine" the record (default: "store"). */
  on_new_value: z.enum(NEW_VALUE_POLICIES).default('store'),
  /** Fields whose values are tracked as a set, so a new value is reported (default: the state and type fields). */
  enum_fields: z
    .array(z.string().min(1))
    .default([
      'projectStatus',
      'projectProgram',
      'projectSector',
      'projectType',
      'projectUnitMetric',
      'unitsStatus',
      'unitsType',
      'transactionUnit',
    ]),
  /** How long a change stays the status problem `upstream-schema-changed` after it was first seen, in hours (default: 24). */
  problem_hours: positiveInt.default(24),
  /** Per-table overrides of the two policies, e.g. `[sync.schema.tables.unit_operations]` (default: none). */
  tables: z.partialRecord(z.enum(SHAPE_TABLES), overrideSchema).default({}),
});

export type SchemaDriftSettings = z.infer<typeof schemaDriftSchema>;
