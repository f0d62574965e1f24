import type { AddressInfo } from 'node:net';
import { type ServerType, serve } from '@hono/node-server';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import type { AppContext, Component } from '../context.js';
import { errorMessage, UserError } from '../errors.js';
import { SteerError } from '../outbox/steer.js';
import { bearerAuth } from './auth.js';
import { MIRROR_ROUTE_SPECS, registerMirrorRoutes } from './mirrorRoutes.js';
import { buildOpenApi } from './openapi.js';
import { OPERATIONS_ROUTE_SPECS, registerOperationsRoutes } from './operationsRoutes.js';
import type { RouteSpec } from './routeSpec.js';
import { registerStatusRoutes, STATUS_ROUTE_SPECS } from './statusRoutes.js';

/** Adds one area's routes to the internal API. */
export type RouteRegistrar = (app: Hono, ctx: AppContext) => void;

/** Every route the internal API serves, as declared for /openapi.json. */
export const ROUTE_SPECS: readonly RouteSpec[] = [
  ...STATUS_ROUTE_SPECS,
  ...MIRROR_ROUTE_SPECS,
  ...OPERATIONS_ROUTE_SPECS,
];

const VERSION = '0.1.0';

/** The areas served by the internal API, one route file each. */
export const ROUTE_REGISTRARS: RouteRegistrar[] = [
  (app, ctx) => registerStatusRoutes(app, ctx, () => buildOpenApi(ROUTE_SPECS, VERSION)),
  registerMirrorRoutes,
  registerOperationsRoutes,
];

/** Largest accepted request body, bytes. */
const MAX_BODY_BYTES = 1024 * 1024;

/** The internal API as a Hono app: bearer token on all but /healthz, JSON errors, no stack traces. */
export function createApiApp(
  ctx: AppContext,
  registrars: readonly RouteRegistrar[] = ROUTE_REGISTRARS,
): Hono {
  const app = new Hono();
  app.get('/healthz', (c) => c.json({ ok: true }));
  app.use('*', bearerAuth(ctx.config.api.token));
  app.use(
    '*',
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: (c) => c.json({ error: `request body is larger than ${MAX_BODY_BYTES} bytes` }, 413),
    }),
  );
  for (const register of registrars) register(app, ctx);
  app.notFound((c) => c.json({ error: `no route for ${c.req.method} ${c.req.path}` }, 404));
  app.onError((err, c) => {
    if (err instanceof SteerError) {
      return c.json(
        { error: err.message },
        err.code === 'not-found' ? 404 : err.code === 'conflict' ? 409 : 400,
      );
    }
    if (err instanceof HTTPException) return c.json({ error: err.message }, err.status);
    if (err instanceof UserError) return c.json({ error: err.message }, 400);
    ctx.log.error({ event: 'api.error', method: c.req.method, path: c.req.path, err }, errorMessage(err));
    return c.json({ error: 'internal error; see the daemon log' }, 500);
  });
  return app;
}

/** host:port → the parts `serve` takes; IPv6 hosts come bracketed. */
export function parseListen(listen: string): { hostname: string; port: number } {
  const at = listen.lastIndexOf(':');
  return { hostname: listen.slice(0, at).replace(/^\[(.*)\]$/, '$1'), port: Number(listen.slice(at + 1)) };
}

/** The internal API listener as a daemon component, on `config.api.listen`. */
export function createApiComponent(
  ctx: AppContext,
  registrars: readonly RouteRegistrar[] = ROUTE_REGISTRARS,
): Component & { address(): AddressInfo | undefined } {
  let server: ServerType | undefined;
  return {
    name: 'api',
    address: () => (server?.address() as AddressInfo | null) ?? undefined,
    async start() {
      const app = createApiApp(ctx, registrars);
      const { hostname, port } = parseListen(ctx.config.api.listen);
      server = await new Promise<ServerType>((resolve, reject) => {
        const s = serve({ fetch: app.fetch, hostname, port }, () => resolve(s));
        s.once('error', (err: NodeJS.ErrnoException) => {
          const why = err.code === 'EADDRINUSE' ? 'address already in use' : (err.code ?? err.message);
          reject(new UserError(`api.listen ${ctx.config.api.listen}: cannot listen (${why})`));
        });
      });
      if (!ctx.config.api.token) {
        ctx.log.warn(
          { event: 'api.no_token' },
          'api.token is not set: the internal API refuses every call but /healthz',
        );
      }
      ctx.log.info(
        { event: 'api.listening', listen: ctx.config.api.listen },
        `internal API on ${ctx.config.api.listen}`,
      );
    },
    async stop() {
      const s = server;
      server = undefined;
      if (!s) return;
      await new Promise<void>((resolve) => {
        s.close(() => resolve());
        // Keep-alive sockets would hold close() open until they time out.
        if ('closeIdleConnections' in s) s.closeIdleConnections();
      });
    },
  };
}
