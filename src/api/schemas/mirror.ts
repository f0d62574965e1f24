import { z } from 'zod';
import { SYNC_TARGETS } from '../../common/syncRequests.js';
import { CHANGE_ALIASES } from '../../feed/feedReads.js';
import { type FieldDef, type FieldType, RESOURCE_FIELDS, type ResourceName } from '../../operator/fields.js';
import { instant, mirrorPage, withDeprecatedAliases } from './common.js';

/**
 * The mirror's records as the read API shows them (mirrorQueries.ts decodeRow), derived from the
 * interface's field lists in operator/fields.ts: a field added there shows up here at once.
 * Enumerations of the operator (projectStatus, unitsStatus, ...) are open: plain strings.
 */

/** How each field type is shown: the key as text, a missing value as null. */
const SHOWN: Record<FieldType, z.ZodType> = {
  id: z.string().describe('the key, as text (12 and "12" are the same record)'),
  text: z.string().nullable(),
  int: z.number().int().nullable(),
  number: z.number().nullable(),
  bool: z.boolean().nullable(),
  // The operator's dates may carry a time (YYYY-MM-DDTHH:MM...), so no `format: date` is promised.
  date: z.string().nullable().describe('a date, YYYY-MM-DD (a time may follow)'),
  textList: z.array(z.string()).nullable(),
};

function recordSchema(fields: readonly FieldDef[], custody: boolean) {
  const shape: Record<string, z.ZodType> = {};
  for (const f of fields) shape[f.name] = SHOWN[f.type];
  shape._first_seen_at = instant.describe('when the mirror first saw the record');
  shape._last_seen_at = instant.describe('when a sync last saw the record');
  shape._removed_at = instant
    .nullable()
    .describe('when a complete scan no longer found it; null while it is listed upstream');
  if (custody) {
    shape._custody_ended_at = instant
      .nullable()
      .describe('when the operator answered that the id left custody; null while in custody');
  }
  return z.object(shape);
}

/** Component names of the records, by the table that holds them. */
const NAMES: Record<ResourceName, string> = {
  projects: 'Project',
  issuances: 'Issuance',
  unit_operations: 'UnitOperation',
  custody_projects: 'CustodyProject',
  custody_issuances: 'CustodyIssuance',
  custody_units: 'CustodyUnit',
};

/** One record of each mirror table, as GET /v1/<list>/{id} answers it. */
export const MIRROR_RECORDS = Object.fromEntries(
  (Object.keys(NAMES) as ResourceName[]).map((r) => [
    r,
    recordSchema(RESOURCE_FIELDS[r].fields, r.startsWith('custody_')).meta({ id: NAMES[r] }),
  ]),
) as Record<ResourceName, z.ZodObject>;

/** One page of each mirror list. */
export const MIRROR_PAGES = Object.fromEntries(
  (Object.keys(NAMES) as ResourceName[]).map((r) => [
    r,
    mirrorPage(MIRROR_RECORDS[r]).meta({ id: `${NAMES[r]}Page` }),
  ]),
) as unknown as Record<ResourceName, z.ZodObject>;

/** One entry of the change feed (feed/feedReads.ts FeedEntry). */
export const changeRow = z
  .object(
    withDeprecatedAliases(
      {
        seq: z.number().int().describe('increasing; pass the last one seen as `after`'),
        resource: z
          .string()
          .describe(
            'the table: projects, issuances, unit_operations, custody_*, ..., or operations (the outbox)',
          ),
        record_id: z.string().describe("the record's key; for operations its marketplaceTransactionRef"),
        kind: z
          .string()
          .describe(
            'insert, update or remove; for operations the state entered: queued, accepted, approved, rejected, failed, cancelled (other kinds may be added: ignore unknown ones)',
          ),
        at: instant,
      },
      CHANGE_ALIASES,
    ),
  )
  .meta({ id: 'Change' });

/** GET /v1/changes. */
export const changesPage = z
  .object({
    items: z.array(changeRow),
    last: z
      .number()
      .int()
      .describe('the last seq of this page (or `after` when empty): call again with after=last'),
    head: z.number().int().describe('the newest seq in the feed'),
  })
  .meta({ id: 'ChangePage' });

/** What POST /v1/sync/{resource} takes: a resource or all of them. */
export const syncResource = z.enum([...SYNC_TARGETS, 'all']);

/** POST /v1/sync/{resource}, 202. */
export const syncScheduled = z
  .object({ scheduled: z.array(z.enum(SYNC_TARGETS)).describe('the resources a sync was started for') })
  .meta({ id: 'SyncScheduled' });
