import path from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { noopMetrics } from '../../src/common/metrics.js';
import { SYNC_HEAP_FLAGS } from '../../src/process/heapSizing.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { pendingMigrations } from '../../src/sqlite/migrations.js';
import { tempDir } from '../helpers/context.js';
import { daemonEnv, daemonToml, spawnCli, writeToml } from './child.js';

/**
 * `vcu-sync sync` loads what a sync uses and nothing the daemon's other parts need: no
 * prom-client (its metrics are no-ops), no HTTP server, no webhook verification, no HTTP client
 * package (node:http carries every request: src/http/httpRequest.ts), and no drizzle-orm unless a
 * migration is pending. The packages a real child process loaded are read from a preload
 * hook, and the mirror must still equal upstream.
 */
const PRELOAD = pathToFileURL(path.join(import.meta.dirname, 'loadedPackages.mjs')).href;
const { dir, cleanup } = tempDir('vcu-sync-lean-');
let sim: Simulator;

beforeAll(async () => {
  sim = await startSimulator({ projects: 30, issuances: 90, units: 400, webhook: { policy: 'none' } });
});
afterAll(async () => {
  await sim.close();
  cleanup();
});

const env = () =>
  daemonEnv(dir, sim.url, writeToml(dir, daemonToml({ onStartup: false, pageSize: 50 })), {
    NODE_OPTIONS: `--import=${PRELOAD}`,
  });

/** Runs `vcu-sync sync ARGS` to its end: the npm packages it loaded and the node flags it ran under. */
async function syncRun(args: string[]): Promise<{ loaded: string[]; execArgv: string[] }> {
  const sync = spawnCli(['sync', ...args], env());
  const code = await sync.exited;
  const output = sync.output();
  expect(code, output.slice(-2000)).toBe(0);
  return {
    loaded: output.match(/LOADED_PACKAGES=(\S*)/)?.[1]?.split(',') ?? [],
    execArgv: JSON.parse(output.match(/EXEC_ARGV=(\S*)/)?.[1] ?? '[]') as string[],
  };
}

/** The npm packages `vcu-sync sync ARGS` loaded. */
const syncLoading = async (args: string[]) => (await syncRun(args)).loaded;

/** The mirror's live rows per list, next to the simulator's. */
function mirrorAndUpstream() {
  const db = new Database(path.join(dir, 'vcu.db'), { readonly: true });
  try {
    const count = (table: string) =>
      (db.prepare(`SELECT count(*) AS n FROM ${table} WHERE _removed_at IS NULL`).get() as { n: number }).n;
    return {
      mirror: { projects: count('projects'), issuances: count('issuances'), units: count('unit_operations') },
      upstream: {
        projects: sim.registry.count('projects'),
        issuances: sim.registry.count('issuances'),
        units: sim.registry.count('units'),
      },
    };
  } finally {
    db.close();
  }
}

// The second test syncs the database the first one created and migrated: they run in order.
describe('vcu-sync sync loads per command what it uses', () => {
  it('migrates a fresh database and syncs every list without loading prom-client, hono, got or the webhook code', async () => {
    const loaded = await syncLoading(['projects', 'issuances', 'units']);
    expect(loaded).toContain('better-sqlite3');
    // A fresh database has every migration pending: drizzle's migrator is loaded to apply them.
    expect(loaded).toContain('drizzle-orm');
    for (const unused of ['prom-client', 'hono', '@hono/node-server', 'standardwebhooks', 'pg', 'got']) {
      expect(loaded).not.toContain(unused);
    }
    const db = new Database(path.join(dir, 'vcu.db'), { readonly: true });
    try {
      expect(pendingMigrations(db)).toBe(0);
    } finally {
      db.close();
    }
    const { mirror, upstream } = mirrorAndUpstream();
    expect(mirror).toEqual(upstream);
  });

  it('does not load drizzle-orm when the database is already migrated; runs under its heap flags', async () => {
    sim.registry.appendUnits(25);
    const { loaded, execArgv } = await syncRun(['units']);
    // Started again in its own process with 1 MiB semi-spaces (src/process/heapSizing.ts): the preload,
    // loaded again after the execve, sees the flags.
    expect(execArgv).toEqual(expect.arrayContaining(SYNC_HEAP_FLAGS));
    expect(loaded).toContain('better-sqlite3');
    expect(loaded).not.toContain('drizzle-orm');
    const { mirror, upstream } = mirrorAndUpstream();
    expect(mirror).toEqual(upstream);
  });

  it('no-op metrics take every call the daemon makes and record nothing', async () => {
    const m = noopMetrics();
    m.syncRuns.inc({ resource: 'units', status: 'succeeded' });
    m.syncDuration.observe({ resource: 'units' }, 1.5);
    m.operatorRequests.inc({ operation: 'getUnitList', code: '200' });
    m.lastSyncSuccess.set({ resource: 'units' }, 1);
    m.problem.reset();
    expect(m.syncRuns.labels('units', 'succeeded')).toBeUndefined();
    await expect(m.registry.metrics()).resolves.toBe('');
  });
});
