/**
 * Starts the simulator: resolves options, builds the shared state and the Hono app, listens.
 */
import type { AddressInfo } from 'node:net';
import { type HttpBindings, serve } from '@hono/node-server';
import { Hono } from 'hono';
import { type Clock, systemClock } from '../common/clock.js';
import type { AuthMode } from './auth.js';
import { Books } from './books.js';
import type { ReceivedNotification, SimEnv, SimState } from './context.js';
import { FaultControl, type FaultRates } from './faultInjection.js';
import { type RateLimitOptions, RequestRateLimit } from './rateLimit.js';
import { Registry } from './registry.js';
import { outcomeOf } from './respond.js';
import { depositAndNotify, registerAdminRoutes } from './routes-admin.js';
import { registerListRoutes } from './routes-lists.js';
import { registerNotifyRoute } from './routes-notify.js';
import { Stats } from './stats.js';
import { type SentWebhook, type WebhookConfig, WebhookSender } from './webhooks.js';

export interface SimulatorOptions {
  /** Interface to listen on (default: '127.0.0.1') */
  host?: string;
  /** Port; 0 picks a free one (default: 0) */
  port?: number;
  /** Seed of every generated record and of probabilistic faults (default: 1) */
  seed?: number;
  /** Generated projects (default: 20) */
  projects?: number;
  /** Generated issuances (default: 60) */
  issuances?: number;
  /** Generated unit operations; generated on demand, so millions are cheap (default: 300) */
  units?: number;
  /** Largest page served; a larger limit is clamped to it (default: 1000) */
  maxPageSize?: number;
  /** Page size when no limit is given (default: 100) */
  defaultPageSize?: number;
  /** Which credential headers reads accept: `apikey`, `Authorization: Bearer`, or either (default: 'either') */
  auth?: AuthMode;
  /** The API key (default: 'sim-api-key') */
  apiKey?: string;
  /** GET /units ignores limit/offset and streams the whole list in one body (default: false) */
  unitsUnpaginated?: boolean;
  /** GET /projects ignores limit/offset and streams the whole list in one body (default: false) */
  projectsUnpaginated?: boolean;
  /** Ids in the marketplace's custody (default: first 3 project ids, first 5 issuance ids, first 10 unit ids) */
  custody?: { projects?: (string | number)[]; issuances?: (string | number)[]; units?: (string | number)[] };
  /** Path of getIssuanceData, `{id}` marks the id (default: '/integration/v1/issuances/{id}') */
  issuanceDataPath?: string;
  /** Path of getUnitsData, `{id}` marks the id (default: '/integration/v1/units/{id}') */
  unitsDataPath?: string;
  /** Outgoing webhooks: receiver, secret, decision policy, delay (default: no url, policy 'approve', delay 50 ms) */
  webhook?: WebhookConfig;
  /** Success status of /notify: 202 as Part B documents, 200 as Part A (default: 202) */
  notifyStatus?: 200 | 202;
  /** Probabilistic faults (default: none) */
  faults?: FaultRates;
  /** Answer 429 with Retry-After to interface requests beyond this rate (default: no limit) */
  rateLimit?: RateLimitOptions;
  /** Time of the rate limit and of the books' dates; tests pass one they move (default: the system clock) */
  clock?: Clock;
}

export interface Simulator {
  /** Base URL, e.g. http://127.0.0.1:40123 (the interface is under /integration/v1). */
  url: string;
  port: number;
  registry: Registry;
  /** The books approved reports keep in the registry (custody, the units log) and their faults. */
  books: Books;
  faults: FaultControl;
  /** Every POST /notify received, in order (credentials stripped from headers). */
  notifications: ReceivedNotification[];
  /** Every webhook sent or being sent, in order. */
  webhooksSent: SentWebhook[];
  webhooks: WebhookSender;
  stats: Stats;
  state: SimState;
  /** Puts the ids into custody and sends a signed custody.deposit webhook; resolves after delivery or give-up. */
  sendDepositWebhook(ids: {
    projectID?: number | string;
    issuanceId?: string | number;
    unitIds?: (string | number)[];
  }): Promise<SentWebhook>;
  /** Resolves when no webhook is scheduled or in flight. */
  webhooksIdle(): Promise<void>;
  close(): Promise<void>;
}

export async function startSimulator(opts: SimulatorOptions = {}): Promise<Simulator> {
  const seed = opts.seed ?? 1;
  const registry = new Registry({
    seed,
    ...(opts.projects !== undefined && { projects: opts.projects }),
    ...(opts.issuances !== undefined && { issuances: opts.issuances }),
    ...(opts.units !== undefined && { units: opts.units }),
    ...(opts.custody !== undefined && { custody: opts.custody }),
  });
  const state: SimState = {
    settings: {
      auth: opts.auth ?? 'either',
      apiKey: opts.apiKey ?? 'sim-api-key',
      maxPageSize: opts.maxPageSize ?? 1000,
      defaultPageSize: opts.defaultPageSize ?? 100,
      unitsUnpaginated: opts.unitsUnpaginated ?? false,
      projectsUnpaginated: opts.projectsUnpaginated ?? false,
      issuanceDataPath: opts.issuanceDataPath ?? '/integration/v1/issuances/{id}',
      unitsDataPath: opts.unitsDataPath ?? '/integration/v1/units/{id}',
      notifyStatus: opts.notifyStatus ?? 202,
    },
    registry,
    books: new Books(registry, opts.clock ?? systemClock),
    faults: new FaultControl(opts.faults ?? {}, seed),
    webhooks: new WebhookSender(opts.webhook ?? {}),
    stats: new Stats(),
    notifications: [],
    rateLimit: opts.rateLimit ? new RequestRateLimit(opts.rateLimit, opts.clock) : undefined,
  };

  const app = new Hono<SimEnv>();
  // Count every interface request when its response closes (resets and cut bodies included).
  app.use('/integration/*', async (c, next) => {
    const res = c.env.outgoing;
    const method = c.req.method;
    const path = c.req.path;
    state.stats.arrive(Date.now(), method, path);
    res.once('close', () => {
      const outcome = outcomeOf.get(res) ?? (res.writableFinished ? String(res.statusCode) : 'aborted');
      state.stats.record(method, path, outcome);
    });
    await next();
  });
  registerListRoutes(app, state);
  registerNotifyRoute(app, state);
  registerAdminRoutes(app, state);
  app.notFound((c) => c.json({ message: `no route for ${c.req.method} ${c.req.path}` }, 404));
  app.onError((err, c) => {
    // Never leak internals (or request contents) in an error answer; tests see the message.
    return c.json({ message: `simulator error: ${err.message}` }, 500);
  });

  const host = opts.host ?? '127.0.0.1';
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve(
      {
        // serve() without createServer options makes a node:http server, so env is HttpBindings.
        fetch: (req, env) => app.fetch(req, env as HttpBindings),
        port: opts.port ?? 0,
        hostname: host,
      },
      () => resolve(s),
    );
    s.once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  return {
    url: `http://${urlHost}:${port}`,
    port,
    registry: state.registry,
    books: state.books,
    faults: state.faults,
    notifications: state.notifications,
    webhooksSent: state.webhooks.sent,
    webhooks: state.webhooks,
    stats: state.stats,
    state,
    sendDepositWebhook: (ids) => depositAndNotify(state, ids),
    webhooksIdle: () => state.webhooks.idle(),
    close: async () => {
      state.webhooks.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        if ('closeAllConnections' in server) server.closeAllConnections();
      });
    },
  };
}
