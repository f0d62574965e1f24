import type { Hono } from 'hono';
import { z } from 'zod';
import {
  BAD_SINCE,
  parseSchemaSince,
  SCHEMA_LIMIT_DEFAULT,
  SCHEMA_LIMIT_MAX,
  SCHEMA_RESOURCE_NAMES,
  schemaTableOf,
  UNKNOWN_RESOURCE,
} from '../mirror/shape/schemaQuery.js';
import type { SchemaAnswer } from '../mirror/shape/shapeReads.js';
import type { MirrorReads } from './mirrorQueries.js';
import { decimalParam, parseQuery, type RouteSpec } from './routeSpec.js';
import { schemaAnswer } from './schemas/shape.js';

/** `GET /v1/schema`: what the mirror learned of the operator's records' shape, and what changed in it. */

const schemaQuery = z.strictObject({
  resource: z
    .enum(SCHEMA_RESOURCE_NAMES as [string, ...string[]], { error: UNKNOWN_RESOURCE })
    .optional()
    .describe('one mirror table (units: unit_operations); default: every one'),
  since: z
    .string()
    .refine((s) => parseSchemaSince(s) !== undefined, BAD_SINCE)
    .optional()
    .describe(
      'only changes first seen at or after this ISO date-time (with its zone) or date (midnight UTC); fields are all listed (default: every change)',
    ),
  limit: decimalParam(1, SCHEMA_LIMIT_MAX)
    .optional()
    .describe(
      `most changes returned, newest first, 1-${SCHEMA_LIMIT_MAX} (default: ${SCHEMA_LIMIT_DEFAULT})`,
    ),
});

/** The route specs of this file, for /openapi.json. */
export const SCHEMA_ROUTE_SPECS: RouteSpec[] = [
  {
    method: 'get',
    path: '/v1/schema',
    operationId: 'getSchema',
    summary:
      "The shape the mirror learned of the operator's records (per table and field: types, mapped or not, null and absent counts, enum values) and the changes seen in it, newest first",
    query: schemaQuery,
    responses: {
      '200': { description: 'every field learned, and the changes asked for', schema: schemaAnswer },
      '400': 'an unknown resource (the allowed ones are named), a bad since or limit',
    },
  },
];

/** The route, reading through the store's `reads`: one read of each table per request. */
export function registerSchemaRoutes(app: Hono, reads: MirrorReads): void {
  app.get('/v1/schema', async (c) => {
    const q = parseQuery(c, schemaQuery);
    const answer: SchemaAnswer = await reads.schema({
      resource: q.resource === undefined ? null : (schemaTableOf(q.resource) ?? null),
      since: q.since === undefined ? null : (parseSchemaSince(q.since) ?? null),
      limit: q.limit ?? SCHEMA_LIMIT_DEFAULT,
    });
    return c.json(answer);
  });
}
