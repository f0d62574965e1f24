import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteContext } from '../../src/app/sqliteStores.js';
import { silentLogger } from '../../src/common/log.js';
import { loadConfig } from '../../src/config/config.js';
import { DAEMON_HEAP_FLAGS, heapFlagsToAdd, SYNC_HEAP_FLAGS } from '../../src/process/heapSizing.js';
import { refusedFlags, startWorker } from '../../src/process/startWorker.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { tempDir } from '../helpers/context.js';
import { enqueueOperation, transfer } from '../outbox/fixtures.js';
import { daemonEnv, daemonToml, spawnCli, until, untilEvent, writeToml } from './child.js';

/**
 * A service unit may give node flags of its own (`ExecStart=node --max-old-space-size=256
 * bin/vcu-sync.js run`). Worker threads inherit the process's flags and refuse the process-wide
 * ones, which stopped the daemon at start ("dispatcher failed to start").
 */

/** V8 heap flags: valid for the process, refused by `new Worker`. */
const HEAP_FLAGS = ['--max-old-space-size=256', '--max-semi-space-size=16'];

let sim: Simulator;
const cleanups: Array<() => void> = [];

beforeAll(async () => {
  sim = await startSimulator({ webhook: { policy: 'none' } });
});
afterAll(async () => {
  await sim.close();
  for (const cleanup of cleanups) cleanup();
});

describe('node flags before the command', () => {
  it('a worker refuses heap flags; startWorker starts it without them, the rest kept', async () => {
    let refusal: NodeJS.ErrnoException | undefined;
    try {
      new Worker('', { eval: true, execArgv: [...HEAP_FLAGS, '--no-warnings'] });
    } catch (err) {
      refusal = err as NodeJS.ErrnoException;
    }
    expect(refusal?.code).toBe('ERR_WORKER_INVALID_EXEC_ARGV');
    expect(refusedFlags(refusal!.message)).toEqual(new Set(HEAP_FLAGS));

    const worker = startWorker("require('node:worker_threads').parentPort.postMessage(process.execArgv)", {
      eval: true,
      execArgv: [...HEAP_FLAGS, '--no-warnings'],
    });
    const [execArgv] = (await once(worker, 'message')) as [string[]];
    expect(execArgv).toEqual(['--no-warnings']);
    await worker.terminate();
  });

  it('vcu-sync run under node heap flags: its threads start, an operation is delivered, SIGTERM exits 0', async () => {
    const { dir, cleanup } = tempDir('vcu-sync-node-flags-');
    cleanups.push(cleanup);
    const dbFile = path.join(dir, 'vcu.db');
    const seed = openSqliteContext(
      loadConfig({ env: { VCU_SYNC_DB: dbFile }, overrides: { 'operator.marketplace_id': 'mkt-ops' } }),
      silentLogger,
    );
    expect(enqueueOperation(seed, transfer('flags-1', { unitId: 93_001 })).status).toBe(201);
    seed.database.close();
    sim.faults.clear();

    const run = spawnCli(
      ['run'],
      daemonEnv(dir, sim.url, writeToml(dir, daemonToml({ onStartup: false }))),
      undefined,
      HEAP_FLAGS,
    );
    await untilEvent(run, 'daemon.ready');
    await until('flags-1 delivered to the operator', () =>
      sim.notifications.some((n) => n.ref === 'flags-1'),
    );
    expect(run.events().map((e) => e.event)).toContain('outbox.thread.started');
    run.child.kill('SIGTERM');
    expect(await run.exited, run.output().slice(-3000)).toBe(0);
  });
});

/** The node command line of process `pid`, as the kernel has it. */
function commandLine(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
}

describe("the daemon's young generation", () => {
  it('run, demo and sync are started again with their heap flags unless the user gave a semi-space size', () => {
    expect(heapFlagsToAdd(['run', '--config', 'x.toml'], [], undefined)).toEqual(DAEMON_HEAP_FLAGS);
    expect(heapFlagsToAdd(['demo'], ['--no-warnings'], '')).toEqual(DAEMON_HEAP_FLAGS);
    expect(heapFlagsToAdd(['sync', 'units'], [], undefined)).toEqual(SYNC_HEAP_FLAGS);
    expect(heapFlagsToAdd(['sync'], [], '--max-semi-space-size=4')).toBeNull();
    // Other one-shot commands keep V8's sizing, and an option's value is no command.
    expect(heapFlagsToAdd(['--config', 'run.toml', 'status'], [], undefined)).toBeNull();
    // A config file named like a command is still the option's value.
    expect(heapFlagsToAdd(['--config', 'sync', 'status'], [], undefined)).toBeNull();
    expect(heapFlagsToAdd(['--config', 'run', 'sync', 'units'], [], undefined)).toEqual(SYNC_HEAP_FLAGS);
    expect(heapFlagsToAdd(['--config=sync', 'run'], [], undefined)).toEqual(DAEMON_HEAP_FLAGS);
    expect(heapFlagsToAdd([], [], undefined)).toBeNull();
    // The user's size wins, given on the command line or in NODE_OPTIONS, in either spelling.
    expect(heapFlagsToAdd(['run'], ['--max-semi-space-size=64'], undefined)).toBeNull();
    expect(heapFlagsToAdd(['run'], [], '--inspect --max_semi_space_size=8')).toBeNull();
    expect(heapFlagsToAdd(['run'], ['--max-old-space-size=256'], undefined)).toEqual(DAEMON_HEAP_FLAGS);
  });

  it("vcu-sync run carries the flags in its own process (same PID, as systemd tracks it); a user's size is kept", async () => {
    const { dir, cleanup } = tempDir('vcu-sync-heap-flags-');
    cleanups.push(cleanup);
    const env = daemonEnv(dir, sim.url, writeToml(dir, daemonToml({ onStartup: false })));
    const run = spawnCli(['run'], env);
    await untilEvent(run, 'daemon.ready');
    const line = commandLine(run.child.pid!);
    expect(line).toEqual(expect.arrayContaining(DAEMON_HEAP_FLAGS));
    expect(line).toContain('run');
    run.child.kill('SIGTERM');
    expect(await run.exited, run.output().slice(-3000)).toBe(0);

    const own = spawnCli(['run'], { ...env, NODE_OPTIONS: '--max-semi-space-size=8' });
    await untilEvent(own, 'daemon.ready');
    expect(commandLine(own.child.pid!).filter((arg) => arg.includes('semi-space'))).toEqual([]);
    own.child.kill('SIGTERM');
    expect(await own.exited, own.output().slice(-3000)).toBe(0);
  });
});
