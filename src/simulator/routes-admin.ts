/**
 * Admin endpoints under /_sim/ (no auth: loopback test tooling). They let a test or benchmark in
 * another process steer the simulator exactly like the in-process API does.
 */
import type { Context, Hono } from 'hono';
import { z } from 'zod';
import { booksPatchSchema } from './books.js';
import type { SimEnv, SimState } from './context.js';
import { driftSpecSchema } from './drift.js';
import { FAULT_KINDS } from './faultInjection.js';
import { RegistryError } from './registry.js';
import { isResourceName, type JsonObject, type ResourceName } from './types.js';
import type { Decision } from './webhooks.js';

const faultSchema = z.strictObject({
  kind: z.enum(FAULT_KINDS),
  count: z.number().int().positive().optional(),
  pathPrefix: z.string().optional(),
  method: z.string().optional(),
  retryAfterSec: z.number().int().nonnegative().optional(),
  latencyMs: z.number().int().nonnegative().optional(),
  htmlStatus: z.union([z.literal(200), z.literal(502)]).optional(),
  truncateMode: z.enum(['short-body', 'cut-json']).optional(),
  driftOp: z.enum(['insert', 'remove']).optional(),
  driftCount: z.number().int().positive().optional(),
  corruptField: z.string().optional(),
  corruptValue: z.unknown().optional(),
  echoKey: z.boolean().optional(),
  echoStatus: z.number().int().min(400).max(599).optional(),
});
const rate = z.number().min(0).max(1).optional();
const ratesSchema = z.strictObject({
  error: rate,
  rateLimit: rate,
  reset: rate,
  truncated: rate,
  html: rate,
  invalidRecord: rate,
  latencyMs: z.number().int().nonnegative().optional(),
  retryAfterSec: z.number().int().nonnegative().optional(),
});
const faultsBody = z.union([faultSchema, z.array(faultSchema), z.strictObject({ rates: ratesSchema })]);

const webhookSchema = z.strictObject({
  url: z.url().optional(),
  secret: z.string().startsWith('whsec_').optional(),
  policy: z.enum(['approve', 'reject', 'none', 'alternate']).optional(),
  delayMs: z.number().int().nonnegative().optional(),
  beforeResponse: z.boolean().optional(),
  maxAttempts: z.number().int().positive().optional(),
  retryBaseMs: z.number().int().nonnegative().optional(),
  retryMaxMs: z.number().int().nonnegative().optional(),
  echoPersonal: z.boolean().optional(),
});
const decisionSchema = z.strictObject({
  ref: z.string().min(1),
  decision: z.enum(['approve', 'reject', 'none']),
  reason: z.string().optional(),
});
const idList = z.array(z.union([z.string(), z.number()]));
const depositSchema = z.strictObject({
  projectID: z.union([z.number(), z.string()]).optional(),
  issuanceId: z.union([z.string(), z.number()]).optional(),
  unitIds: idList.optional(),
});
const authSchema = z.strictObject({
  apiKey: z.string().min(1).optional(),
  auth: z.enum(['apikey', 'bearer', 'either']).optional(),
});

async function jsonBody(c: Context<SimEnv>): Promise<unknown> {
  try {
    return await c.req.json();
  } catch {
    return undefined;
  }
}

function invalid(c: Context<SimEnv>, error: z.ZodError | string): Response {
  const message = typeof error === 'string' ? error : z.prettifyError(error);
  return c.json({ message }, 400);
}

function registryFailure(c: Context<SimEnv>, err: unknown): Response {
  if (!(err instanceof RegistryError)) throw err;
  const status = err.code === 'invalid' ? 400 : err.code === 'exists' ? 409 : 404;
  return c.json({ message: err.message }, status);
}

function resourceParam(c: Context<SimEnv>): ResourceName | undefined {
  const r = c.req.param('resource') ?? '';
  return isResourceName(r) ? r : undefined;
}

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

export function registerAdminRoutes(app: Hono<SimEnv>, state: SimState): void {
  const { registry, faults, webhooks, stats } = state;

  app.get('/_sim/notifications', (c) => {
    const ref = c.req.query('ref');
    return c.json(ref === undefined ? state.notifications : state.notifications.filter((n) => n.ref === ref));
  });
  app.delete('/_sim/notifications', (c) => {
    state.notifications.length = 0;
    return c.body(null, 204);
  });

  app.get('/_sim/faults', (c) =>
    c.json({ pending: faults.pending(), rates: faults.rates, injected: faults.injected }),
  );
  app.post('/_sim/faults', async (c) => {
    const parsed = faultsBody.safeParse(await jsonBody(c));
    if (!parsed.success) return invalid(c, parsed.error);
    const body = parsed.data;
    if ('rates' in body) faults.setRates(body.rates);
    else
      for (const { kind, count, ...opts } of Array.isArray(body) ? body : [body])
        faults.next(count ?? 1, kind, opts);
    return c.json({ pending: faults.pending(), rates: faults.rates });
  });
  app.delete('/_sim/faults', (c) => {
    faults.clear();
    return c.body(null, 204);
  });

  app.get('/_sim/counts', (c) => c.json(registry.counts()));
  app.get('/_sim/records/:resource/:id', (c) => {
    const resource = resourceParam(c);
    if (!resource) return invalid(c, 'resource must be projects, issuances or units');
    const record = registry.get(resource, c.req.param('id'));
    return record ? c.json(record) : c.json({ message: 'not found' }, 404);
  });
  app.post('/_sim/records/:resource', async (c) => {
    const resource = resourceParam(c);
    if (!resource) return invalid(c, 'resource must be projects, issuances or units');
    const body = await jsonBody(c);
    if (!isObject(body)) return invalid(c, 'body must be a JSON object (a record)');
    try {
      return c.json(registry.add(resource, body), 201);
    } catch (err) {
      return registryFailure(c, err);
    }
  });
  app.patch('/_sim/records/:resource/:id', async (c) => {
    const resource = resourceParam(c);
    if (!resource) return invalid(c, 'resource must be projects, issuances or units');
    const body = await jsonBody(c);
    if (!isObject(body)) return invalid(c, 'body must be a JSON object of fields to change');
    try {
      return c.json(registry.change(resource, c.req.param('id'), body));
    } catch (err) {
      return registryFailure(c, err);
    }
  });
  app.delete('/_sim/records/:resource/:id', (c) => {
    const resource = resourceParam(c);
    if (!resource) return invalid(c, 'resource must be projects, issuances or units');
    try {
      registry.remove(resource, c.req.param('id'));
      return c.body(null, 204);
    } catch (err) {
      return registryFailure(c, err);
    }
  });
  app.post('/_sim/units/append', async (c) => {
    const parsed = z.strictObject({ count: z.number().int().nonnegative() }).safeParse(await jsonBody(c));
    if (!parsed.success) return invalid(c, parsed.error);
    return c.json(registry.appendUnits(parsed.data.count));
  });

  app.get('/_sim/drift', (c) => c.json({ drifts: registry.drifts.list() }));
  app.post('/_sim/drift', async (c) => {
    const parsed = driftSpecSchema.safeParse(await jsonBody(c));
    if (!parsed.success) return invalid(c, parsed.error);
    return c.json(registry.drift(parsed.data), 201);
  });
  app.delete('/_sim/drift', (c) => {
    const resource = c.req.query('resource');
    if (resource !== undefined && !isResourceName(resource))
      return invalid(c, 'resource must be projects, issuances or units');
    registry.clearDrift(resource);
    return c.body(null, 204);
  });

  app.get('/_sim/books', (c) => c.json(state.books.view()));
  app.post('/_sim/books', async (c) => {
    const parsed = booksPatchSchema.safeParse(await jsonBody(c));
    if (!parsed.success) return invalid(c, parsed.error);
    return c.json(state.books.apply(parsed.data));
  });

  app.get('/_sim/custody', (c) =>
    c.json({
      projects: registry.custodyIds('projects'),
      issuances: registry.custodyIds('issuances'),
      units: registry.custodyIds('units'),
    }),
  );
  app.post('/_sim/webhooks/deposit', async (c) => {
    const parsed = depositSchema.safeParse((await jsonBody(c)) ?? {});
    if (!parsed.success) return invalid(c, parsed.error);
    try {
      return c.json(await depositAndNotify(state, parsed.data));
    } catch (err) {
      return registryFailure(c, err);
    }
  });
  app.get('/_sim/webhooks', (c) => c.json(webhooks.sent));
  app.post('/_sim/webhook', async (c) => {
    const parsed = webhookSchema.safeParse(await jsonBody(c));
    if (!parsed.success) return invalid(c, parsed.error);
    webhooks.configure(parsed.data);
    const { secret: _secret, ...visible } = webhooks.config;
    return c.json(visible);
  });
  app.post('/_sim/decisions', async (c) => {
    const parsed = decisionSchema.safeParse(await jsonBody(c));
    if (!parsed.success) return invalid(c, parsed.error);
    const { ref, decision, reason } = parsed.data;
    webhooks.setDecision(ref, decision satisfies Decision, reason);
    return c.body(null, 204);
  });

  app.get('/_sim/stats', (c) => c.json(stats.snapshot()));
  app.delete('/_sim/stats', (c) => {
    stats.reset();
    return c.body(null, 204);
  });
  app.post('/_sim/auth', async (c) => {
    const parsed = authSchema.safeParse(await jsonBody(c));
    if (!parsed.success) return invalid(c, parsed.error);
    if (parsed.data.apiKey !== undefined) state.settings.apiKey = parsed.data.apiKey;
    if (parsed.data.auth !== undefined) state.settings.auth = parsed.data.auth;
    return c.json({ auth: state.settings.auth });
  });
}

/** A deposit: the ids enter custody, then the confirmation webhook is sent (awaited). */
export async function depositAndNotify(
  state: SimState,
  ids: { projectID?: number | string; issuanceId?: string | number; unitIds?: (string | number)[] },
) {
  const { registry } = state;
  if (ids.projectID !== undefined) registry.addToCustody('projects', [ids.projectID]);
  if (ids.issuanceId !== undefined) registry.addToCustody('issuances', [ids.issuanceId]);
  if (ids.unitIds) registry.addToCustody('units', ids.unitIds);
  return state.webhooks.sendDeposit(ids);
}
