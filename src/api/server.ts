import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { errorMessage, SteerError, UserError } from '../common/errors.js';
import type { RequestSync } from '../common/syncRequests.js';
import type { Config } from '../config/config.js';
import type { AppContext, Component } from '../context.js';
import type { FeedReads } from '../feed/feedReads.js';
import { VERSION } from '../health/identity.js';
import { judgeReadiness, type ReadinessReader } from '../health/readiness.js';
import type { ClassifyFault } from '../health/refusal.js';
import type { HealthReads } from '../health/snapshot.js';
import { type HttpListener, type ListenersUp, startHttpListener } from '../http/httpListener.js';
import type { OutboxAccess } from '../outbox/access.js';
import type { ScriptStore } from '../store/script.js';
import type { DeliveriesAccess } from '../subscribers/deliveriesStore.js';
import { bearerAuth } from './auth.js';
import { unavailableAnswer } from './databaseUnavailable.js';
import { DELIVERIES_ROUTE_SPECS, registerDeliveriesRoutes } from './deliveriesRoutes.js';
import { FEED_ROUTE_SPECS, registerFeedRoutes } from './feedRoutes.js';
import type { MirrorReads } from './mirrorQueries.js';
import { MIRROR_ROUTE_SPECS, registerMirrorRoutes } from './mirrorRoutes.js';
import { buildOpenApi } from './openapi.js';
import { operationsRouteSpecs, registerOperationsRoutes } from './operationsRoutes.js';
import { RECONCILIATION_ROUTE_SPECS, registerReconciliationRoutes } from './reconciliationRoutes.js';
import { requestGuard } from './requestGuard.js';
import type { RouteSpec } from './routeSpec.js';
import { registerSchemaRoutes, SCHEMA_ROUTE_SPECS } from './schemaRoutes.js';
import { registerStatusRoutes, STATUS_ROUTE_SPECS } from './statusRoutes.js';

/**
 * Adds one area's routes to the internal API. `closing` aborts when the API stops: routes that hold
 * a request open (long-polls, event streams) end it then instead of holding the stop.
 */
export type RouteRegistrar = (app: Hono, ctx: AppContext, closing: AbortSignal) => void;

/** Every route the internal API serves, as declared for /openapi.json. */
export function routeSpecs(config: Config): RouteSpec[] {
  return [
    ...STATUS_ROUTE_SPECS,
    ...MIRROR_ROUTE_SPECS,
    ...FEED_ROUTE_SPECS,
    ...SCHEMA_ROUTE_SPECS,
    ...operationsRouteSpecs(config),
    ...DELIVERIES_ROUTE_SPECS,
    ...RECONCILIATION_ROUTE_SPECS,
  ];
}

/** /openapi.json of this configuration (built once: the configuration does not change while running). */
function openApiDocument(ctx: AppContext): () => Record<string, unknown> {
  let document: Record<string, unknown> | undefined;
  return () => (document ??= buildOpenApi(routeSpecs(ctx.config), { version: VERSION }));
}

/** The store's seams the routes read and write through (app/ hands the configured store's). */
export interface ApiSeams {
  /** The mirror's lists and records, and its learned shape (`GET /v1/schema`). */
  mirrorReads: MirrorReads;
  /** The operations routes' outbox. */
  outbox: OutboxAccess;
  /** Status, metrics and the page. */
  healthReads: HealthReads;
  /** The deliveries routes' reads and steering. */
  deliveries: DeliveriesAccess;
  /** The change feed's reads and wake-ups. */
  feed: FeedReads;
  /** The reconciliation's findings and balance sheets (`GET /v1/reconciliation`). */
  reconciliation: ScriptStore;
}

/** The seams, and what the API calls in other loops of the same process (app/daemon.ts wires them). */
export interface ApiLinks extends ApiSeams {
  /** The dispatcher's wake, after an enqueue or a retry (default: none; it polls). */
  wakeDispatcher?: (() => void) | undefined;
  /** The mirror scheduler's sync requests, for `POST /v1/sync` (default: none; 503). */
  requestSync?: RequestSync | undefined;
}

/** The areas served by the internal API, one route file each, linked to the loops they call. */
export function routeRegistrars({
  wakeDispatcher,
  requestSync,
  mirrorReads,
  outbox,
  healthReads,
  deliveries,
  feed,
  reconciliation,
}: ApiLinks): RouteRegistrar[] {
  return [
    (app, ctx) => registerStatusRoutes(app, ctx, openApiDocument(ctx), healthReads),
    (app, ctx) => registerMirrorRoutes(app, ctx, mirrorReads, requestSync),
    (app, ctx, closing) => registerFeedRoutes(app, ctx, { closing, feed }),
    (app) => registerSchemaRoutes(app, mirrorReads),
    (app, ctx) => registerOperationsRoutes(app, ctx, { wake: wakeDispatcher, outbox }),
    (app, ctx) => registerDeliveriesRoutes(app, ctx, deliveries),
    (app, ctx) => registerReconciliationRoutes(app, ctx, reconciliation),
  ];
}

/** What the API itself reads of the store beside its routes. */
export interface ApiOptions {
  /** /readyz's facts. */
  readiness: ReadinessReader;
  /** The listeners up now, shared with the webhook listener (default: its own, with the API alone). */
  listeners?: ListenersUp;
  /** How the store reads a failed request's error: a database fault is answered with 503. */
  unavailable: ClassifyFault;
}

/**
 * The internal API as a Hono app: bearer token on all but /healthz, /readyz and /runbook (Basic for
 * reads only), no cross-site or non-JSON state changes, JSON errors, no stack traces.
 */
export function createApiApp(
  ctx: AppContext,
  registrars: readonly RouteRegistrar[],
  closing: AbortSignal,
  options: ApiOptions,
): Hono {
  const app = new Hono();
  const readinessFacts = options.readiness;
  const listeners = options.listeners ?? new Map();
  // Liveness and readiness answer without the token: load balancers and systemd probes have none.
  app.get('/healthz', (c) => c.json({ ok: true }));
  app.get('/readyz', async (c) => {
    const readiness = judgeReadiness(await readinessFacts(listeners));
    return c.json(readiness, readiness.ready ? 200 : 503);
  });
  app.use('*', bearerAuth(ctx.config.api.token));
  // Origin, content type and declared size; bodies are read (and counted) by the routes that take one.
  app.use('*', requestGuard());
  for (const register of registrars) register(app, ctx, closing);
  app.notFound((c) => c.json({ error: `no route for ${c.req.method} ${c.req.path}` }, 404));
  app.onError((err, c) => {
    if (err instanceof SteerError) {
      return c.json(
        { error: err.message },
        err.code === 'not-found' ? 404 : err.code === 'conflict' ? 409 : 400,
      );
    }
    if (err instanceof HTTPException) {
      // The unread rest of an oversized body makes the connection unusable: say so, or a keep-alive
      // client sends its next request on a socket the server is about to close.
      return c.json({ error: err.message }, err.status, err.status === 413 ? { connection: 'close' } : {});
    }
    if (err instanceof UserError) return c.json({ error: err.message }, 400);
    const unavailable = unavailableAnswer(options.unavailable, ctx, c, err);
    if (unavailable) return unavailable;
    ctx.log.error({ event: 'api.error', method: c.req.method, path: c.req.path, err }, errorMessage(err));
    return c.json({ error: 'internal error; see the daemon log' }, 500);
  });
  return app;
}

/** The internal API listener as a daemon component, on `config.api.listen`. */
export function createApiComponent(
  ctx: AppContext,
  registrars: readonly RouteRegistrar[],
  options: ApiOptions,
): Component & { address(): { host: string; port: number } | undefined } {
  // One registry for the component and each app it builds: a restart keeps what /readyz reads.
  const listeners = options.listeners ?? new Map<string, string>();
  let listener: HttpListener | undefined;
  let closing = new AbortController();
  return {
    name: 'api',
    address: () => listener && { host: listener.host, port: listener.port },
    async start() {
      closing = new AbortController();
      const app = createApiApp(ctx, registrars, closing.signal, { ...options, listeners });
      listener = await startHttpListener(app.fetch, ctx.config.api.listen, 'api.listen', (err) =>
        ctx.log.error({ event: 'api.server_error', error: errorMessage(err) }, 'internal API server error'),
      );
      listeners.set('api', listener.url);
      if (!ctx.config.api.token) {
        ctx.log.warn(
          { event: 'api.no_token' },
          'api.token is not set: the internal API refuses every call but /healthz',
        );
      }
      ctx.log.info(
        { event: 'api.listening', listen: `${listener.host}:${listener.port}` },
        `internal API on ${listener.url}`,
      );
    },
    async stop() {
      const current = listener;
      listener = undefined;
      listeners.delete('api');
      // Long-polls answer and event streams end now, rather than holding the stop for 5 s.
      closing.abort();
      // A status page or a list being read may finish; a stuck client is cut after 5 s.
      await current?.close(5_000);
    },
  };
}
