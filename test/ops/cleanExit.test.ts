import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { tempDir } from '../helpers/context.js';
import { daemonEnv, daemonToml, spawnCli, untilEvent, writeToml } from './child.js';

/**
 * better-sqlite3 12 on Node 24.19+ aborted the process when a GC finalized a statement: it showed
 * up as a non-zero exit (SIGABRT) at teardown, after the work had succeeded. Each start and stop
 * here must end with exit code 0, every time.
 */
const ROUNDS = 6;
let sim: Simulator;
const cleanups: Array<() => void> = [];

beforeAll(async () => {
  sim = await startSimulator({ projects: 40, issuances: 120, units: 600, webhook: { policy: 'none' } });
});
afterAll(async () => {
  await sim.close();
  for (const cleanup of cleanups) cleanup();
});

function workDir(): string {
  const { dir, cleanup } = tempDir('vcu-sync-exit-');
  cleanups.push(cleanup);
  return dir;
}

describe('child processes exit cleanly, every time', () => {
  it(`vcu-sync sync exits 0 in ${ROUNDS} runs in a row on one database`, async () => {
    const dir = workDir();
    const env = daemonEnv(dir, sim.url, writeToml(dir, daemonToml({ onStartup: false, pageSize: 50 })));
    for (let round = 0; round < ROUNDS; round++) {
      const sync = spawnCli(['sync', ...(round % 2 ? ['--full'] : [])], env);
      const code = await sync.exited;
      expect({ round, code, signal: sync.child.signalCode }, sync.output().slice(-2000)).toEqual({
        round,
        code: 0,
        signal: null,
      });
    }
  });

  it(`vcu-sync run stopped by SIGTERM exits 0 in ${ROUNDS} runs in a row`, async () => {
    const dir = workDir();
    const env = daemonEnv(dir, sim.url, writeToml(dir, daemonToml({ onStartup: true, pageSize: 100 })));
    for (let round = 0; round < ROUNDS; round++) {
      const run = spawnCli(['run'], env);
      await untilEvent(run, 'daemon.ready');
      run.child.kill('SIGTERM');
      const code = await run.exited;
      expect({ round, code, signal: run.child.signalCode }, run.output().slice(-2000)).toEqual({
        round,
        code: 0,
        signal: null,
      });
    }
  });
});
