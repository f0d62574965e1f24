/**
 * The webhook listener as a daemon component: its own HTTP server on `webhook.listen` (separate
 * from the internal API, since this one faces the internet through the reverse proxy), plus
 * occasional inbox maintenance.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import type { AppContext, Component } from '../context.js';
import { ConfigError, errorMessage } from '../errors.js';
import { createWebhookApp, WEBHOOK_PATH, type WebhookAppOptions } from './app.js';
import { runInboxMaintenance } from './maintenance.js';

export { createWebhookApp, WEBHOOK_PATH, type WebhookAppOptions } from './app.js';

/** Options of {@link createWebhookComponent}. */
export interface WebhookComponentOptions extends WebhookAppOptions {
  /** How often pending decisions are swept and old refusals pruned, in ms (default: 60000). */
  maintenanceMs?: number;
  /** How long stop() waits for requests in flight before closing their connections, in ms (default: 5000). */
  stopTimeoutMs?: number;
}

/** The component, plus where it listens once started. */
export interface WebhookComponent extends Component {
  /** The bound address once started (the real port when `listen` asked for port 0). */
  address(): { host: string; port: number; url: string } | undefined;
}

/** Splits "host:port" (IPv6 in brackets). */
export function parseHostPort(value: string): { host: string; port: number } {
  const colon = value.lastIndexOf(':');
  const host = value.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(value.slice(colon + 1)) };
}

/** The webhook listener component. */
export function createWebhookComponent(
  ctx: AppContext,
  options: WebhookComponentOptions = {},
): WebhookComponent {
  let server: Server | undefined;
  let timer: NodeJS.Timeout | undefined;
  let bound: { host: string; port: number; url: string } | undefined;

  const maintain = () => {
    try {
      runInboxMaintenance(ctx);
    } catch (err) {
      ctx.log.warn(
        { event: 'webhook.maintenance_failed', error: errorMessage(err) },
        'inbox maintenance failed',
      );
    }
  };

  return {
    name: 'webhook-listener',
    address: () => bound,
    async start() {
      const cfg = ctx.config.webhook;
      let app: ReturnType<typeof createWebhookApp>;
      try {
        app = createWebhookApp(ctx, options);
      } catch (err) {
        throw new ConfigError([errorMessage(err)]);
      }
      if (cfg.scheme === 'none') {
        ctx.log.warn(
          { event: 'webhook.unsigned', listen: cfg.listen },
          'webhook.scheme is "none": webhooks are NOT authenticated; anyone who reaches the listener can decide operations',
        );
      }
      const { host, port } = parseHostPort(cfg.listen);
      const srv = createAdaptorServer({ fetch: app.fetch }) as Server;
      // Slow senders must not hold connections open forever.
      srv.headersTimeout = 10_000;
      srv.requestTimeout = 30_000;
      await new Promise<void>((resolve, reject) => {
        const onError = (err: NodeJS.ErrnoException) => {
          reject(
            new ConfigError([`webhook.listen ${cfg.listen}: cannot listen (${err.code ?? err.message})`]),
          );
        };
        srv.once('error', onError);
        srv.listen(port, host, () => {
          srv.off('error', onError);
          resolve();
        });
      });
      srv.on('error', (err) =>
        ctx.log.error({ event: 'webhook.server_error', error: errorMessage(err) }, 'webhook server error'),
      );
      server = srv;
      const info = srv.address() as AddressInfo;
      const urlHost = info.family === 'IPv6' ? `[${info.address}]` : info.address;
      bound = { host: info.address, port: info.port, url: `http://${urlHost}:${info.port}${WEBHOOK_PATH}` };
      maintain();
      timer = setInterval(maintain, options.maintenanceMs ?? 60_000);
      timer.unref();
      ctx.log.info(
        { event: 'webhook.listening', listen: `${urlHost}:${info.port}`, scheme: cfg.scheme },
        'webhook listener started',
      );
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      const srv = server;
      server = undefined;
      if (!srv) return;
      const closed = new Promise<void>((resolve) => srv.close(() => resolve()));
      srv.closeIdleConnections();
      const force = setTimeout(() => srv.closeAllConnections(), options.stopTimeoutMs ?? 5_000);
      await closed;
      clearTimeout(force);
      ctx.log.info({ event: 'webhook.stopped' }, 'webhook listener stopped');
    },
  };
}
