import type { Server } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { ConfigError } from '../common/errors.js';

/** A listening HTTP server for a Hono app, as both the internal API and the webhook listener use it. */
export interface HttpListener {
  /** Where it listens (the real port when the config asked for port 0). */
  host: string;
  port: number;
  /** http://host:port */
  url: string;
  /** Stops accepting, lets requests in flight finish, then cuts what is left after `forceAfterMs`. */
  close(forceAfterMs: number): Promise<void>;
}

/**
 * The HTTP listeners up now, by component name ('api', 'webhook-listener'): each listener sets its
 * own on start and removes it on stop; /readyz reads them all. The daemon's wiring owns the one its
 * listeners share (app/daemon.ts).
 */
export type ListenersUp = Map<string, string>;

/** Splits "host:port" (IPv6 hosts in brackets). */
export function parseHostPort(value: string): { host: string; port: number } {
  const colon = value.lastIndexOf(':');
  return { host: value.slice(0, colon).replace(/^\[(.*)\]$/, '$1'), port: Number(value.slice(colon + 1)) };
}

/** The variable that sets each listen key, named with it so the fix can be made where it was set. */
const LISTEN_VARIABLES: Record<string, string> = {
  'api.listen': 'VCU_SYNC_LISTEN',
  'webhook.listen': 'VCU_SYNC_WEBHOOK_LISTEN',
};

/** "api.listen 127.0.0.1:8787: cannot listen (address already in use: ...)", naming the key (pure). */
export function cannotListen(configKey: string, listen: string, err: NodeJS.ErrnoException): ConfigError {
  const variable = LISTEN_VARIABLES[configKey];
  const fix = `choose another ${configKey}${variable ? ` (or ${variable})` : ''}`;
  const why =
    err.code === 'EADDRINUSE'
      ? `address already in use: another process listens on port ${parseHostPort(listen).port}; stop it or ${fix}`
      : err.code === 'EADDRNOTAVAIL'
        ? `no interface of this host has that address; ${fix}`
        : err.code === 'EACCES'
          ? `permission denied: ports below 1024 need privileges; ${fix}`
          : (err.code ?? err.message);
  return new ConfigError([`${configKey} ${listen}: cannot listen (${why})`]);
}

/**
 * Binds each address for a moment and lets it go: the daemon calls it before it opens (and maybe
 * creates or migrates) the database, so a port in use is one line and exit 78 with nothing touched.
 * Two keys on one address would pass alone and collide later, so they are refused too.
 */
export async function checkListenable(
  listeners: ReadonlyArray<{ key: string; listen: string }>,
): Promise<void> {
  const seen = new Map<string, string>();
  for (const { key, listen } of listeners) {
    const { host, port } = parseHostPort(listen);
    const other = port === 0 ? undefined : seen.get(`${host}:${port}`);
    if (other)
      throw new ConfigError([`${key} ${listen}: the same address as ${other}; give each its own port`]);
    seen.set(`${host}:${port}`, key);
    const probe = createServer();
    await new Promise<void>((resolve, reject) => {
      probe.once('error', (err: NodeJS.ErrnoException) => reject(cannotListen(key, listen, err)));
      probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
    });
  }
}

/**
 * Listens on `listen` (host:port). A port in use or an address that cannot be bound is a
 * ConfigError naming `configKey`, so the daemon exits with one clear line instead of half-running.
 */
export async function startHttpListener(
  fetch: (request: Request) => Response | Promise<Response>,
  listen: string,
  configKey: string,
  onError: (err: Error) => void,
): Promise<HttpListener> {
  const { host, port } = parseHostPort(listen);
  const server = createAdaptorServer({ fetch }) as Server;
  // Slow or stalled clients must not hold connections open forever.
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException) => reject(cannotListen(configKey, listen, err));
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  server.on('error', onError);
  const info = server.address() as AddressInfo;
  const urlHost = info.family === 'IPv6' ? `[${info.address}]` : info.address;
  return {
    host: info.address,
    port: info.port,
    url: `http://${urlHost}:${info.port}`,
    async close(forceAfterMs) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Idle keep-alive sockets would hold close() open until they time out.
      server.closeIdleConnections();
      const force = setTimeout(() => server.closeAllConnections(), forceAfterMs);
      await closed;
      clearTimeout(force);
    },
  };
}
