import { z } from 'zod';
import { CHANGE_KINDS } from '../../mirror/shape/shapeTypes.js';
import { instant } from './common.js';

/**
 * `GET /v1/schema` (mirror/shape/shapeReads.ts FieldView, ChangeView): the shape learned of the
 * operator's records, per mirror table and field, and the changes seen in it.
 */

const jsonTypes = z
  .array(z.string())
  .describe('JSON types seen: string, number, boolean, object, array, null');

/** One field of one table as learned (reads.ts FieldView). */
export const schemaField = z
  .object({
    resource: z.string().describe('the mirror table: projects, issuances, unit_operations, custody_*'),
    field: z.string().describe('the field as the operator spells it'),
    types: jsonTypes,
    admitted: jsonTypes
      .nullable()
      .describe("mapped to a column: the types it takes there; null: kept in the record's _raw only"),
    mapped: z.boolean().describe('the mirror has a column for it'),
    values: z
      .array(z.string())
      .nullable()
      .describe('an enum-like field (sync.schema.enum_fields): the values seen; else null'),
    keyFormats: z
      .array(z.string())
      .nullable()
      .describe("the record's key: the formats its values took (integer, uuid, text); else null"),
    records: z.number().int().describe('records read by the last complete scan'),
    present: z.number().int().describe('of those, records with the field'),
    nulls: z.number().int().describe('of those, records where it was null'),
    absent: z.number().int().describe('of those, records without it (records - present)'),
    firstSeenAt: instant,
    lastSeenAt: instant,
    removedAt: instant.nullable().describe('when a complete scan no longer found it; null while it is seen'),
  })
  .meta({ id: 'SchemaField' });

/** One change of the shape, recorded once (reads.ts ChangeView, table schema_changes). */
export const schemaChange = z
  .object({
    id: z.number().int().describe('the change feed names it by this (resource schema_changes)'),
    resource: z.string().describe('the mirror table'),
    field: z.string(),
    kind: z.enum(CHANGE_KINDS),
    before: z.string().nullable().describe('the type or format before; null for a new field or value'),
    after: z.string().describe('the type, value or format seen'),
    mapped: z.boolean().describe('the field has a column in the mirror (its policy applies)'),
    firstSeenAt: instant,
    lastSeenAt: instant,
    exampleKey: z.string().nullable().describe('the key of a record that showed it'),
    count: z.number().int().describe('records that showed it, over every run'),
    runId: z.number().int().nullable().describe('the sync run that first saw it'),
  })
  .meta({ id: 'SchemaChange' });

/** A record the shape policy holds back (quarantine), until a policy or mapping change admits it. */
export const heldRecord = z
  .object({
    id: z.number().int().describe('its quarantine row'),
    resource: z.string().describe('the mirror table'),
    key: z.string().nullable(),
    reason: z.string().describe('starts with "schema: ", names the field and the policy'),
    at: instant,
  })
  .meta({ id: 'SchemaHeldRecord' });

/** The answer: every field learned (of the resource asked), the changes asked for, what is held back. */
export const schemaAnswer = z
  .object({
    fields: z.array(schemaField).describe('ordered by resource, then field'),
    changes: z.array(schemaChange).describe('newest first, at most `limit`'),
    quarantined: z
      .object({
        counts: z.record(z.string(), z.number().int()).describe('open held-back records per mirror table'),
        records: z.array(heldRecord).describe('the oldest, at most `limit`'),
      })
      .describe(
        'records the shape policy holds back; re-applied by the next run once the policy or mapping admits them',
      ),
  })
  .meta({ id: 'Schema' });
