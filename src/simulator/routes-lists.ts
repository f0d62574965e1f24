/**
 * The read side of the operator interface: public lists (getProjectList, getIssuanceList,
 * getUnitList) and Marketplace Data reads (getProjectData, getIssuanceData, getUnitsData).
 */
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type { Context, Hono } from 'hono';
import type { SimEnv, SimState } from './context.js';
import type { Fault } from './faultInjection.js';
import { guard } from './guard.js';
import { jsonArrayBody, streamJsonArray, writeBody, writeJson, writeTruncated } from './respond.js';
import { ID_FIELD, type JsonObject, type ResourceName } from './types.js';

const V1 = '/integration/v1';

const DEFAULT_CORRUPTION: Record<ResourceName, [string, unknown]> = {
  projects: ['projectID', 'abc'],
  issuances: ['issuanceAmount', 'lots'],
  units: ['unitsQuantity', 'lots'],
};

/** A copy of the record with one field of the wrong JSON type (the invalid-record fault). */
export function corrupt(resource: ResourceName, record: JsonObject, fault: Fault): JsonObject {
  const [field, value] = DEFAULT_CORRUPTION[resource];
  return { ...record, [fault.corruptField ?? field]: fault.corruptValue ?? value };
}

type Query = { ok: true; limit: number; offset: number } | { ok: false; message: string };

/** limit/offset: absent → defaults; otherwise digits only; limit >= 1, clamped to maxPageSize. */
export function parsePaging(
  limit: string | undefined,
  offset: string | undefined,
  max: number,
  dflt: number,
): Query {
  const digits = /^\d{1,15}$/;
  if (limit !== undefined && (!digits.test(limit) || Number(limit) < 1)) {
    return { ok: false, message: 'limit must be a positive integer' };
  }
  if (offset !== undefined && !digits.test(offset)) {
    return { ok: false, message: 'offset must be a non-negative integer' };
  }
  return {
    ok: true,
    limit: Math.min(limit === undefined ? dflt : Number(limit), max),
    offset: offset === undefined ? 0 : Number(offset),
  };
}

function listFilter(c: Context<SimEnv>, resource: ResourceName): ((r: JsonObject) => boolean) | undefined {
  if (resource === 'projects') {
    const status = c.req.query('status');
    return status === undefined ? undefined : (r) => r.projectStatus === status;
  }
  if (resource === 'issuances') {
    const projectID = c.req.query('projectID');
    return projectID === undefined ? undefined : (r) => String(r.issuanceProjectId) === projectID;
  }
  return undefined;
}

/**
 * Drift: change records before `offset` between two page requests. Removing n shifts later
 * offsets down (the client skips n records); inserting n among served records shifts the last n
 * served ones into the requested page (the client sees them twice).
 */
function applyDrift(state: SimState, resource: ResourceName, offset: number, fault: Fault): void {
  const n = fault.driftCount ?? 1;
  const ids =
    fault.driftOp === 'insert'
      ? state.registry.insertBefore(resource, Math.max(0, offset - n), n)
      : state.registry.removeBefore(resource, offset, n);
  state.faults.noteLast({ resource, op: fault.driftOp ?? 'remove', offset, ids });
}

function* filtered(
  records: Iterable<JsonObject>,
  keep: ((r: JsonObject) => boolean) | undefined,
  serve: (r: JsonObject) => JsonObject,
) {
  for (const r of records) if (!keep || keep(r)) yield serve(r);
}

async function serveList(c: Context<SimEnv>, state: SimState, resource: ResourceName): Promise<Response> {
  const g = await guard(c, state, { isList: true, returnsRecords: true }, true);
  if (g.handled) return RESPONSE_ALREADY_SENT;
  const res = c.env.outgoing;
  const { settings, registry } = state;
  const paging = parsePaging(
    c.req.query('limit'),
    c.req.query('offset'),
    settings.maxPageSize,
    settings.defaultPageSize,
  );
  if (!paging.ok) {
    writeJson(res, 400, { message: paging.message });
    return RESPONSE_ALREADY_SENT;
  }
  const fault = g.fault;
  // The drifts this request is served with (a waiting drift counts it); filters see what is served.
  const changes = registry.drifts.listRequest(resource);
  const serve = (r: JsonObject) => registry.served(resource, r, changes);
  const filter = listFilter(c, resource);
  const keep = filter && changes.length > 0 ? (r: JsonObject) => filter(serve(r)) : filter;
  const unpaginated =
    (resource === 'units' && settings.unitsUnpaginated) ||
    (resource === 'projects' && settings.projectsUnpaginated);

  if (unpaginated) {
    // One body with every record, streamed: the client must not assume pages.
    let records: Iterable<JsonObject> = filtered(registry.iterate(resource), keep, serve);
    if (fault?.kind === 'invalid-record') records = corruptNth(records, resource, fault, 0);
    const cut = fault?.kind === 'truncated' ? Math.floor(registry.count(resource) / 2) : undefined;
    await streamJsonArray(res, records, cut);
    return RESPONSE_ALREADY_SENT;
  }

  if (fault?.kind === 'drift') applyDrift(state, resource, paging.offset, fault);
  // ignore-offset: an operator that honours limit but always answers the list's first page.
  const offset = fault?.kind === 'ignore-offset' ? 0 : paging.offset;
  const page = registry.page(resource, offset, paging.limit, keep).map(serve);
  if (fault?.kind === 'invalid-record' && page.length > 0) {
    const i = Math.floor(page.length / 2);
    page[i] = corrupt(resource, page[i] as JsonObject, fault);
    state.faults.noteLast({ resource, id: page[i]?.[ID_FIELD[resource]] ?? null, index: i });
  }
  const body = jsonArrayBody(page);
  if (fault?.kind === 'truncated') writeTruncated(res, 200, body, fault.truncateMode ?? 'short-body');
  else writeBody(res, 200, body);
  return RESPONSE_ALREADY_SENT;
}

function* corruptNth(records: Iterable<JsonObject>, resource: ResourceName, fault: Fault, n: number) {
  let i = 0;
  for (const r of records) yield i++ === n ? corrupt(resource, r, fault) : r;
}

async function serveData(c: Context<SimEnv>, state: SimState, resource: ResourceName): Promise<Response> {
  const g = await guard(c, state, { isList: false, returnsRecords: true }, true);
  if (g.handled) return RESPONSE_ALREADY_SENT;
  const res = c.env.outgoing;
  const id = c.req.param('id') ?? '';
  const { registry } = state;
  // A key-format drift renames the records: their new ids are read as well as the stored ones.
  const stored = registry.storedId(resource, id);
  const held = registry.inCustody(resource, stored) ? registry.get(resource, stored) : undefined;
  const record = held && registry.served(resource, held);
  if (!record) {
    writeJson(res, 404, {
      message: `${ID_FIELD[resource]} ${id} is not held in the marketplace's custody account`,
    });
    return RESPONSE_ALREADY_SENT;
  }
  const fault = g.fault;
  const out = fault?.kind === 'invalid-record' ? corrupt(resource, record, fault) : record;
  const body = JSON.stringify(out);
  if (fault?.kind === 'truncated') writeTruncated(res, 200, body, fault.truncateMode ?? 'short-body');
  else writeBody(res, 200, body);
  return RESPONSE_ALREADY_SENT;
}

/** `/integration/v1/issuances/{id}` → `/integration/v1/issuances/:id` (Hono's syntax). */
export function toRoute(template: string): string {
  return template.replace(/\{id\}/g, ':id');
}

export function registerListRoutes(app: Hono<SimEnv>, state: SimState): void {
  app.get(`${V1}/projects`, (c) => serveList(c, state, 'projects'));
  app.get(`${V1}/issuances`, (c) => serveList(c, state, 'issuances'));
  app.get(`${V1}/units`, (c) => serveList(c, state, 'units'));
  app.get(`${V1}/projects/:id`, (c) => serveData(c, state, 'projects'));
  app.get(toRoute(state.settings.issuanceDataPath), (c) => serveData(c, state, 'issuances'));
  app.get(toRoute(state.settings.unitsDataPath), (c) => serveData(c, state, 'units'));
}
