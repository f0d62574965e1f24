import type { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { z } from 'zod';
import type { RequestSync } from '../common/syncRequests.js';
import { SYNC_TARGETS as ALL_TARGETS, type SyncTarget } from '../common/syncRequests.js';
import type { AppContext } from '../context.js';
import type { ResourceName } from '../operator/fields.js';
import { type ColumnFilter, inDateOrder, type MirrorReads } from './mirrorQueries.js';
import { cursorKeyFor, decodeCursor, encodeCursor } from './pageCursor.js';
import {
  cursorParam,
  decimalParam,
  fromParam,
  limitParam,
  parseQuery,
  type RouteSpec,
  removedParam,
  toParam,
} from './routeSpec.js';
import { MIRROR_PAGES, MIRROR_RECORDS, syncResource, syncScheduled } from './schemas/mirror.js';

/** A query parameter mapped onto a column. */
interface FilterParam {
  param: string;
  column: string;
  op: ColumnFilter['op'];
  schema: z.ZodType;
}

const text = (param: string, column: string, what: string): FilterParam => ({
  param,
  column,
  op: '=',
  schema: z.string().min(1).optional().describe(what),
});
const integer = (param: string, column: string, what: string): FilterParam => ({
  param,
  column,
  op: '=',
  schema: decimalParam(0).optional().describe(what),
});
const dates = (column: string, ordered = false): FilterParam[] => {
  // A list in date order says so on its bounds: a client paging it must not expect key order.
  const note = ordered ? `; with either bound the list is ordered by ${column}, then key` : '';
  return [
    {
      param: 'from',
      column,
      op: '>=',
      schema: ordered ? fromParam.describe(`${fromParam.description}${note}`) : fromParam,
    },
    {
      param: 'to',
      column,
      op: '<=',
      schema: ordered ? toParam.describe(`${toParam.description}${note}`) : toParam,
    },
  ];
};

/** The mirror lists served, their URL names and the filters people use on each. */
const LISTS: ReadonlyArray<{
  path: string;
  resource: ResourceName;
  what: string;
  filters: FilterParam[];
  /** Date column whose from/to filters put the list in date order (then key). */
  dateOrder?: string;
}> = [
  {
    path: '/v1/projects',
    resource: 'projects',
    what: 'projects (public list)',
    filters: [
      text('status', 'projectStatus', 'projectStatus, exactly'),
      text('country', 'projectCountry', 'projectCountry, exactly'),
      text('program', 'projectProgram', 'projectProgram, exactly'),
      ...dates('ProjectStatusDate'),
    ],
  },
  {
    path: '/v1/issuances',
    resource: 'issuances',
    what: 'issuances (public list)',
    filters: [
      integer('projectID', 'issuanceProjectId', 'issuanceProjectId'),
      integer('vintage', 'issuanceVintageYear', 'issuanceVintageYear'),
      ...dates('issuanceDate'),
    ],
  },
  {
    path: '/v1/units',
    resource: 'unit_operations',
    what: 'unit operations (public list)',
    filters: [
      text('issuance', 'unitsIssuanceID', 'unitsIssuanceID, exactly'),
      text('status', 'unitsStatus', 'unitsStatus, exactly'),
      text('type', 'unitsType', 'unitsType, exactly'),
      ...dates('unitsDate', true),
    ],
    dateOrder: 'unitsDate',
  },
  { path: '/v1/custody/projects', resource: 'custody_projects', what: 'projects in custody', filters: [] },
  { path: '/v1/custody/issuances', resource: 'custody_issuances', what: 'issuances in custody', filters: [] },
  { path: '/v1/custody/units', resource: 'custody_units', what: 'units in custody', filters: [] },
];

/** What a list's cursor holds: the last key served, and its date when the list is in date order. */
const keyCursor = z.strictObject({ k: z.string(), d: z.string().optional() });

function listQuerySchema(filters: FilterParam[]) {
  const shape: Record<string, z.ZodType> = { limit: limitParam, cursor: cursorParam, removed: removedParam };
  for (const f of filters) shape[f.param] = f.schema;
  return z.strictObject(shape);
}

const SYNC_TARGETS = syncResource.options;

/** `/v1/custody/projects` → `CustodyProjects`: the noun of the list's operationIds. */
const nounOf = (path: string) =>
  path
    .slice('/v1/'.length)
    .split('/')
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');

/** The route specs of this file, for /openapi.json. */
export const MIRROR_ROUTE_SPECS: RouteSpec[] = [
  ...LISTS.flatMap((l): RouteSpec[] => [
    {
      method: 'get',
      path: l.path,
      operationId: `list${nounOf(l.path)}`,
      summary: `List ${l.what}, paginated by cursor${l.dateOrder ? ` (in ${l.dateOrder} order when from or to is given)` : ''}`,
      query: listQuerySchema(l.filters),
      responses: {
        '200': { description: 'a page; `next` is null on the last one', schema: MIRROR_PAGES[l.resource] },
        '400': 'a bad filter or cursor, named in the error',
      },
    },
    {
      method: 'get',
      path: `${l.path}/{id}`,
      // listProjects → getProject: the singular of the list's noun.
      operationId: `get${nounOf(l.path).replace(/s$/, '')}`,
      summary: `One of the ${l.what} by key`,
      params: z.strictObject({ id: z.string().min(1).describe("the record's key") }),
      responses: {
        '200': { description: 'the record', schema: MIRROR_RECORDS[l.resource] },
        '404': 'not in the mirror',
      },
    },
  ]),
  {
    method: 'post',
    path: '/v1/sync/{resource}',
    operationId: 'requestSync',
    summary: `Start a sync now (${SYNC_TARGETS.join(', ')}); answers at once`,
    params: z.strictObject({ resource: syncResource.describe('what to sync; all is every resource') }),
    responses: {
      '202': { description: 'scheduled', schema: syncScheduled },
      '400': 'unknown resource',
      '503': 'the daemon is not running the scheduler',
    },
  },
];

/** The mirror's routes, reading through the store's `reads`, one read per request. */
export function registerMirrorRoutes(
  app: Hono,
  ctx: AppContext,
  reads: MirrorReads,
  requestSync?: RequestSync,
): void {
  const cursorKey = cursorKeyFor(ctx.config.api.token);
  for (const list of LISTS) {
    const schema = listQuerySchema(list.filters);
    app.get(list.path, async (c) => {
      const q = parseQuery(c, schema) as Record<string, string | number | undefined>;
      const filters: ColumnFilter[] = [];
      for (const f of list.filters) {
        const value = q[f.param];
        if (value !== undefined) filters.push({ column: f.column, op: f.op, value });
      }
      const cursor =
        q.cursor === undefined ? undefined : decodeCursor(String(q.cursor), keyCursor, cursorKey);
      const dated = inDateOrder({ filters, dateOrder: list.dateOrder });
      // A date-ordered page starts after a (date, key): a cursor without the date is not one it gave.
      if (cursor && dated && cursor.d === undefined)
        throw new HTTPException(400, { message: 'cursor: not a cursor this API gave out' });
      const { rows, lastKey, lastDate } = await reads.list({
        resource: list.resource,
        filters,
        removed: (q.removed as 'false' | 'true' | 'only' | undefined) ?? 'false',
        after: cursor?.k,
        afterDate: cursor?.d,
        limit: (q.limit as number | undefined) ?? 100,
        dateOrder: list.dateOrder,
      });
      const next =
        lastKey === null
          ? null
          : encodeCursor(lastDate === undefined ? { k: lastKey } : { k: lastKey, d: lastDate }, cursorKey);
      return c.json({ items: rows, next });
    });
    app.get(`${list.path}/:id`, async (c) => {
      const record = await reads.get(list.resource, c.req.param('id'));
      return record
        ? c.json(record)
        : c.json({ error: `${list.path.slice(4)} ${c.req.param('id')} is not in the mirror` }, 404);
    });
  }

  app.post('/v1/sync/:resource', async (c) => {
    const resource = c.req.param('resource');
    if (!(SYNC_TARGETS as readonly string[]).includes(resource)) {
      return c.json({ error: `resource: expected one of ${SYNC_TARGETS.join(', ')}` }, 400);
    }
    const targets: readonly SyncTarget[] = resource === 'all' ? ALL_TARGETS : [resource as SyncTarget];
    if (!(await requestSync?.(targets, 'api')))
      return c.json({ error: 'this process does not run the sync scheduler' }, 503);
    return c.json({ scheduled: targets }, 202);
  });
}
