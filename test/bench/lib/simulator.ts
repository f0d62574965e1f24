import { type Child, spawnNode, tsx } from './proc.js';

/** A simulator running in its own process, so its work never shares the measured event loop. */
export interface SimChild {
  url: string;
  child: Child;
  /** POST/GET/DELETE an admin endpoint under /_sim/. */
  admin(method: string, path: string, body?: unknown): Promise<unknown>;
  close(): Promise<void>;
}

/** Starts `vcu-sync simulator ARGS --port 0` from the sources and waits for its URL. */
export async function startSimChild(args: string[]): Promise<SimChild> {
  const child = spawnNode(tsx('src/cli.ts', ['simulator', '--port', '0', ...args]));
  const [, url] = await child.waitFor(/listening on (http:\/\/\S+)/, 60_000);
  const base = url as string;
  return {
    url: base,
    child,
    async admin(method, path, body) {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      if (!res.ok) throw new Error(`simulator ${method} ${path}: ${res.status} ${await res.text()}`);
      const text = await res.text();
      return text === '' ? null : (JSON.parse(text) as unknown);
    },
    close: () => child.stop(),
  };
}
