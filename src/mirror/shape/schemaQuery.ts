import { isCalendarDay } from '../../common/clock.js';
import { SHAPE_TABLES } from '../../config/configShape.js';
import type { ResourceName } from '../../operator/fields.js';

/**
 * What `GET /v1/schema` and `vcu-sync schema` accept, checked once for both (pure): the resource, a
 * mirror table or the sync's name for one, and `since`, an ISO date-time or date.
 */

/** Most changes one answer holds, and how many when no limit is asked (the CLI always shows that many). */
export const SCHEMA_LIMIT_MAX = 1000;
export const SCHEMA_LIMIT_DEFAULT = 100;

/** The mirror tables whose shape is learned, as `schema_fields.resource` names them. */
export const SCHEMA_TABLES: readonly ResourceName[] = SHAPE_TABLES;

/** The sync's names (`vcu-sync sync units`, `POST /v1/sync/units`) of a table whose name differs. */
const SYNC_NAMES: Readonly<Record<string, ResourceName>> = { units: 'unit_operations' };

/** Every resource name accepted, for help texts and errors. */
export const SCHEMA_RESOURCE_NAMES: readonly string[] = [...SCHEMA_TABLES, ...Object.keys(SYNC_NAMES)];

/** Why a resource is refused: names every one allowed. */
export const UNKNOWN_RESOURCE = `expected one of ${SCHEMA_TABLES.join(', ')} (or units, for unit_operations)`;

/** The table a resource name means; undefined when it names none. */
export function schemaTableOf(name: string): ResourceName | undefined {
  if ((SCHEMA_TABLES as readonly string[]).includes(name)) return name as ResourceName;
  return Object.hasOwn(SYNC_NAMES, name) ? SYNC_NAMES[name] : undefined;
}

/** Why a `since` is refused. */
export const BAD_SINCE =
  'expected an ISO date-time with its zone (2026-01-02T03:04:05Z, 2026-01-02T04:04:05+01:00) or a date (2026-01-02, midnight UTC)';

const DATE_TIME = /^(\d{4}-\d{2}-\d{2})T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * `since` as the instant it names, in the form the stores compare (`toISOString()`, UTC with
 * milliseconds); undefined when it names none. A time must carry its zone: without one it would
 * mean the reader's local time on one machine and something else on the next.
 */
export function parseSchemaSince(text: string): string | undefined {
  if (isCalendarDay(text)) return `${text}T00:00:00.000Z`;
  const m = DATE_TIME.exec(text);
  if (!m || !isCalendarDay(m[1]!)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : new Date(at).toISOString();
}
