import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { ConfigError } from './errors.js';

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

/** Splits "host:port" (IPv6 hosts in brackets). */
export function parseHostPort(value: string): { host: string; port: number } {
  const colon = value.lastIndexOf(':');
  return { host: value.slice(0, colon).replace(/^\[(.*)\]$/, '$1'), port: Number(value.slice(colon + 1)) };
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
    const failed = (err: NodeJS.ErrnoException) => {
      const why = err.code === 'EADDRINUSE' ? 'address already in use' : (err.code ?? err.message);
      reject(new ConfigError([`${configKey} ${listen}: cannot listen (${why})`]));
    };
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
