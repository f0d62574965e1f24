import type { Hono } from 'hono';
import { z } from 'zod';
import type { Metrics } from '../common/metrics.js';
import { SHAPE_TABLES } from '../config/configShape.js';
import { type AppContext, operatorRate } from '../context.js';
import { healthSchema } from '../health/health.js';
import { type Health, readHealth } from '../health/readHealth.js';
import type { Series } from '../health/series.js';
import type { HealthReads } from '../health/snapshot.js';
import { OPERATION_STATES } from '../operations/states.js';
import { FINDING_KINDS } from '../reconcile/findingKinds.js';
import type { RouteSpec } from './routeSpec.js';
import { readRunbookMarkdown, renderRunbook } from './runbook.js';
import { livenessBody, readinessBody } from './schemas/common.js';
import { renderStatusPage } from './statusPage.js';

/** Routes of this file, for /openapi.json. */
export const STATUS_ROUTE_SPECS: RouteSpec[] = [
  {
    method: 'get',
    path: '/healthz',
    operationId: 'getLiveness',
    summary: 'Liveness: the process answers',
    responses: { '200': { description: 'alive', schema: livenessBody } },
    public: true,
  },
  {
    method: 'get',
    path: '/readyz',
    operationId: 'getReadiness',
    summary:
      'Readiness: 200 when the database takes writes, its schema is current, both listeners are up and sending is not paused',
    responses: {
      '200': { description: 'ready: { ready: true, reasons: [] }', schema: readinessBody },
      '503': { description: 'not ready, one line per reason', schema: readinessBody },
    },
    public: true,
  },
  {
    method: 'get',
    path: '/status',
    operationId: 'getStatus',
    summary: 'Health as JSON (same as vcu-sync status --json)',
    responses: {
      '200': { description: 'ok or warning', schema: healthSchema },
      '503': { description: 'critical (the same JSON)', schema: healthSchema },
    },
  },
  {
    method: 'get',
    path: '/metrics',
    operationId: 'getMetrics',
    summary: 'Prometheus metrics',
    responses: { '200': { description: 'text exposition format' } },
    produces: 'text/plain',
  },
  {
    method: 'get',
    path: '/',
    operationId: 'getStatusPage',
    summary: 'Status page for people',
    responses: { '200': { description: 'HTML' } },
    produces: 'text/html',
  },
  {
    method: 'get',
    path: '/runbook',
    operationId: 'getRunbook',
    summary: "README's runbook section: what each status problem code means and what to do (anchors by code)",
    responses: {
      '200': { description: 'HTML' },
      '404': { description: 'README not installed', contentType: 'text/plain' },
    },
    produces: 'text/html',
    public: true,
  },
  {
    method: 'get',
    path: '/openapi.json',
    operationId: 'getOpenApi',
    summary: 'This document',
    responses: {
      '200': {
        description: 'OpenAPI 3.1',
        schema: z.looseObject({ openapi: z.string() }).describe('an OpenAPI 3.1 document'),
      },
    },
  },
];

/** Copies the health figures into the gauges, so Prometheus sees what `vcu-sync status` sees. */
export function updateGauges(metrics: Metrics, health: Health, now: number): void {
  const s = health.snapshot;
  // The verdict always: an unreadable or unreachable database is when the alerts matter most.
  metrics.status.set(health.exitCode);
  // Only the problems present now: a resolved one's series goes stale and its alert resolves.
  metrics.problem.reset();
  for (const p of health.problems) metrics.problem.set({ code: p.code, severity: p.severity }, 1);
  // An unreadable database has no figures: the gauges keep their last values rather than drop to 0.
  if (s.database.readError || s.database.unreachable || s.resources.length === 0) return;
  for (const state of OPERATION_STATES) metrics.outboxDepth.set({ state }, s.outbox.byState[state] ?? 0);
  metrics.outboxOldestQueuedAge.set(
    s.outbox.oldestQueuedAt ? (now - Date.parse(s.outbox.oldestQueuedAt)) / 1000 : 0,
  );
  const id = health.identity;
  metrics.buildInfo.reset();
  metrics.buildInfo.set(
    {
      version: id.version,
      instance: id.instance,
      operator_host: id.operatorHost ?? '',
      database_kind: id.database.kind,
      database: id.database.location,
      node: id.node,
    },
    1,
  );
  if (id.startedAt) metrics.startTime.set(Date.parse(id.startedAt) / 1000);
  metrics.subscriberBacklog.reset();
  for (const b of s.subscribers ?? []) {
    metrics.subscriberBacklog.set({ subscriber: b.subscriber, state: 'pending' }, b.pending);
    metrics.subscriberBacklog.set({ subscriber: b.subscriber, state: 'dead' }, b.dead);
  }
  metrics.decisionsAwaiting.set(s.outbox.byState.accepted ?? 0);
  metrics.decisionOldestAge.set(
    s.outbox.oldestAcceptedAt ? Math.max(0, (now - Date.parse(s.outbox.oldestAcceptedAt)) / 1000) : 0,
  );
  schemaGauges(metrics, s.schema);
  reconciliationGauges(metrics, s.reconciliation);
  for (const r of s.resources) {
    metrics.mirrorRecords.set({ resource: r.resource }, r.records);
    if (r.effectivePageSize !== null)
      metrics.effectivePageSize.set({ resource: r.resource }, r.effectivePageSize);
    if (r.lastSuccessAt)
      metrics.lastSyncSuccess.set({ resource: r.resource }, Date.parse(r.lastSuccessAt) / 1000);
  }
}

/**
 * The schema-drift gauges: every change recorded, by table and kind (no series: none recorded), and
 * the records quarantined for their shape, 0 for every table whose shape is learned and none open.
 */
function schemaGauges(metrics: Metrics, schema: Health['snapshot']['schema']): void {
  metrics.schemaChanges.reset();
  for (const r of schema.recorded)
    metrics.schemaChanges.set({ resource: r.resource, kind: r.kind }, r.changes);
  metrics.schemaQuarantined.reset();
  for (const resource of SHAPE_TABLES) metrics.schemaQuarantined.set({ resource }, 0);
  for (const q of schema.quarantined) metrics.schemaQuarantined.set({ resource: q.resource }, q.records);
}

/**
 * The open reconciliation findings by kind and severity: 0 for every kind this version raises with
 * none open (a series that is always there can be graphed and alerted on), then the counts read.
 */
function reconciliationGauges(metrics: Metrics, reconciliation: Health['snapshot']['reconciliation']): void {
  metrics.reconciliationFindings.reset();
  for (const [kind, severity] of Object.entries(FINDING_KINDS))
    metrics.reconciliationFindings.set({ kind, severity }, 0);
  for (const o of reconciliation.open)
    metrics.reconciliationFindings.set({ kind: o.kind, severity: o.severity }, o.findings);
}

/** The charts' points, or none when the database cannot be read (the problems say why). */
async function seriesOrEmpty(reads: HealthReads, now: number): Promise<Series> {
  try {
    return await reads.series(now);
  } catch {
    return { syncDurations: [], queueDepth: [], recentWebhooks: [] };
  }
}

/** Status, metrics and the page, judged from a snapshot read through the store's `reads`. */
export function registerStatusRoutes(
  app: Hono,
  ctx: AppContext,
  openapi: () => Record<string, unknown>,
  reads: HealthReads,
): void {
  const health = async (): Promise<Health> => {
    const h = await readHealth(reads, ctx.config, ctx.clock.now(), ctx.startedAt);
    const rate = operatorRate(ctx);
    return rate ? { ...h, operatorRate: rate } : h;
  };
  app.get('/status', async (c) => {
    const h = await health();
    return c.json(h, h.status === 'critical' ? 503 : 200);
  });
  app.get('/metrics', async (c) => {
    const now = ctx.clock.now();
    updateGauges(ctx.metrics, await health(), now);
    return c.text(await ctx.metrics.registry.metrics(), 200, {
      'content-type': ctx.metrics.registry.contentType,
    });
  });
  app.get('/', async (c) => {
    const now = ctx.clock.now();
    return c.html(renderStatusPage(await health(), await seriesOrEmpty(reads, now), now));
  });
  app.get('/runbook', (c) => {
    const markdown = readRunbookMarkdown();
    if (!markdown)
      return c.text('README.md is not installed beside the code: see the Runbook section there', 404);
    return c.html(renderRunbook(markdown));
  });
  app.get('/openapi.json', (c) => c.json(openapi()));
}
