import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteContext } from '../../src/app/sqliteStores.js';
import { silentLogger } from '../../src/common/log.js';
import { loadConfig } from '../../src/config/config.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { Rng } from '../../src/simulator/prng.js';
import { tempDir } from '../helpers/context.js';
import { expectMirrorEqualsRegistry } from './harness.js';

const CHILD = path.join(import.meta.dirname, 'syncChild.ts');
const PAGE = 20;
const UNITS = 4000;

let sim: Simulator | undefined;
let cleanup: (() => void) | undefined;
afterEach(async () => {
  await sim?.close();
  cleanup?.();
});

function startChild(env: NodeJS.ProcessEnv): { child: ChildProcess; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, 'projects', 'issuances', 'units'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d) => {
    stderr += String(d);
  });
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      if (code !== null && code !== 0) console.error(stderr);
      resolve(code);
    }),
  );
  return { child, exited };
}

async function until(cond: () => boolean, done: Promise<unknown>): Promise<boolean> {
  let finished = false;
  void done.then(() => {
    finished = true;
  });
  for (let i = 0; i < 60_000; i++) {
    if (cond()) return true;
    if (finished) return false;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error('condition never met');
}

describe('crash and resume', () => {
  it('a sync killed with SIGKILL at random moments resumes and ends identical to the registry', async () => {
    sim = await startSimulator({ projects: 30, issuances: 70, units: UNITS });
    const tmp = tempDir();
    cleanup = tmp.cleanup;
    const db = path.join(tmp.dir, 'crash.db');
    const env = {
      VCU_SYNC_DB: db,
      VCU_SYNC_OPERATOR_URL: sim.url,
      VCU_SYNC_API_KEY: 'sim-api-key',
      VCU_SYNC_LOG_LEVEL: 'warn',
      TEST_PAGE_SIZE: String(PAGE),
    };
    const ctx = openSqliteContext(loadConfig({ env }), silentLogger);
    const rng = new Rng(7);
    const checkpointOf = () =>
      (
        ctx.database.sqlite
          .prepare("SELECT next_offset FROM sync_checkpoints WHERE resource = 'units'")
          .get() as { next_offset: number } | undefined
      )?.next_offset;

    let kills = 0;
    for (; kills < 12; kills++) {
      const offsetBefore = checkpointOf() ?? 0;
      sim.stats.reset();
      const { child, exited } = startChild(env);
      const target = rng.int(2, 12);
      const reached = await until(() => sim!.stats.count('/integration/v1/units') >= target, exited);
      if (!reached) break; // it finished before we could kill it
      // Random extra moment inside the page handling, not only at a request boundary.
      await new Promise((r) => setTimeout(r, rng.int(0, 15)));
      child.kill('SIGKILL');
      await exited;
      const requested = sim.stats.count('/integration/v1/units');
      // What it committed never exceeds what it fetched, and never goes backwards.
      const offsetAfter = checkpointOf() ?? 0;
      expect(offsetAfter).toBeGreaterThanOrEqual(offsetBefore);
      expect(offsetAfter).toBeLessThanOrEqual(offsetBefore + requested * PAGE);
    }
    expect(kills).toBeGreaterThanOrEqual(10);

    // The last run completes; it fetches only the pages after the checkpoint (plus one record overlap each).
    const remainingFrom = checkpointOf() ?? 0;
    sim.stats.reset();
    const { exited } = startChild(env);
    expect(await exited).toBe(0);
    const pagesNeeded = Math.ceil((UNITS - remainingFrom) / (PAGE - 1)) + 1;
    expect(sim.stats.count('/integration/v1/units')).toBeLessThanOrEqual(pagesNeeded);

    expectMirrorEqualsRegistry({ sim, ctx: ctx as never, close: async () => {} });
    const statuses = ctx.database.sqlite
      .prepare('SELECT status, count(*) n FROM sync_runs GROUP BY status')
      .all();
    expect(statuses.map((s) => (s as { status: string }).status).sort()).toEqual([
      'interrupted',
      'succeeded',
    ]);
    expect(
      ctx.database.sqlite.prepare('SELECT count(*) n FROM changes WHERE kind = ?').get('insert'),
    ).toEqual({
      n: 30 + 70 + UNITS,
    });
    ctx.database.close();
  }, 180_000);
});
