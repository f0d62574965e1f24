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

/** How many records of each list a registry simulator serves. */
export interface RegistrySize {
  projects: number;
  issuances: number;
  units: number;
}

/** The registry the full-sync scenarios (SQLite and PostgreSQL) read. */
export const fullSyncSize = (quick: boolean): RegistrySize =>
  quick
    ? { projects: 200, issuances: 2_000, units: 20_000 }
    : { projects: 5_000, issuances: 50_000, units: 1_000_000 };

/** A simulator serving a generated registry of `size`, pages capped at `pageSize`, no faults. */
export function startRegistrySim(size: RegistrySize, pageSize: number): Promise<SimChild> {
  return startSimChild([
    '--projects',
    String(size.projects),
    '--issuances',
    String(size.issuances),
    '--units',
    String(size.units),
    '--max-page-size',
    String(pageSize),
    '--policy',
    'none',
  ]);
}

/** Config overrides for a sync against `sim` at full speed with `pageSize` pages. */
export const syncOverrides = (sim: SimChild, pageSize: number): Record<string, unknown> => ({
  'operator.url': sim.url,
  'operator.api_key': 'sim-api-key',
  'operator.rate_per_second': 100_000,
  'sync.page_size': pageSize,
});
