import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { tempDir } from '../helpers/context.js';
import { freePort } from '../helpers/net.js';
import { daemonEnv, daemonToml, spawnCli, until, writeToml } from './child.js';

let sim: Simulator;
let dir: string;
let cleanup: () => void;

beforeAll(async () => {
  sim = await startSimulator({ webhook: { policy: 'none' } });
  ({ dir, cleanup } = tempDir('vcu-sync-sdnotify-'));
});
afterAll(async () => {
  await sim.close();
  cleanup();
});

/**
 * A stand-in for systemd-notify, first on PATH: appends one line per call with its arguments and,
 * for --ready, whether both listeners accepted a connection at that moment.
 */
function fakeSystemdNotify(binDir: string, record: string, apiPort: number, webhookPort: number): void {
  const script = `#!/usr/bin/env bash
line="$*"
if [[ " $* " == *" --ready "* ]]; then
  up=yes
  for port in ${apiPort} ${webhookPort}; do
    if ! (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then up=no; fi
  done
  line="$line listeners-up=$up"
fi
echo "$line socket=$NOTIFY_SOCKET" >> ${JSON.stringify(record)}
`;
  const file = path.join(binDir, 'systemd-notify');
  writeFileSync(file, script);
  chmodSync(file, 0o755);
}

describe('systemd notify', () => {
  it('sends READY=1 once the listeners are up, WATCHDOG=1 while running, STOPPING=1 on SIGTERM', async () => {
    const record = path.join(dir, 'notify.log');
    writeFileSync(record, '');
    const [apiPort, webhookPort] = [await freePort(), await freePort()];
    fakeSystemdNotify(dir, record, apiPort, webhookPort);
    const lines = () => readFileSync(record, 'utf8').split('\n').filter(Boolean);

    const run = spawnCli(
      ['run'],
      daemonEnv(dir, sim.url, writeToml(dir, daemonToml({ onStartup: false })), {
        PATH: `${dir}:${process.env.PATH}`,
        NOTIFY_SOCKET: '/run/fake-notify.sock',
        // 2 s: the daemon pings every second (half the interval).
        WATCHDOG_USEC: '2000000',
        VCU_SYNC_LISTEN: `127.0.0.1:${apiPort}`,
        VCU_SYNC_WEBHOOK_LISTEN: `127.0.0.1:${webhookPort}`,
      }),
    );
    try {
      await until(
        () => `READY and a watchdog ping; notify calls: ${lines().join(' | ')}; output: ${run.output()}`,
        () => lines().some((l) => l.includes('WATCHDOG=1')),
      );
      const ready = lines().filter((l) => l.includes('--ready'));
      expect(ready).toHaveLength(1);
      expect(ready[0]).toContain(`--pid=${run.child.pid}`);
      expect(ready[0]).toContain('listeners-up=yes');
      expect(ready[0]).toContain('socket=/run/fake-notify.sock');
      // READY comes first: nothing is reported before the daemon is ready.
      expect(lines()[0]).toContain('--ready');
      expect(lines().some((l) => l.includes('STOPPING=1'))).toBe(false);

      run.child.kill('SIGTERM');
      expect(await run.exited, run.output().slice(-3000)).toBe(0);
      await until(
        () => `STOPPING=1; notify calls: ${lines().join(' | ')}`,
        () => lines().some((l) => l.includes('STOPPING=1')),
      );
      expect(lines().filter((l) => l.includes('STOPPING=1'))).toHaveLength(1);
    } finally {
      if (run.child.exitCode === null) run.child.kill('SIGKILL');
    }
  });

  it('does nothing outside systemd (no NOTIFY_SOCKET)', async () => {
    const record = path.join(dir, 'notify.log');
    writeFileSync(record, '');
    const run = spawnCli(
      ['run'],
      daemonEnv(dir, sim.url, writeToml(dir, daemonToml({ onStartup: false })), {
        PATH: `${dir}:${process.env.PATH}`,
        WATCHDOG_USEC: '2000000',
      }),
    );
    await until(
      () => `daemon.ready; output: ${run.output()}`,
      () => run.events().some((e) => e.event === 'daemon.ready'),
    );
    run.child.kill('SIGTERM');
    expect(await run.exited, run.output().slice(-3000)).toBe(0);
    expect(readFileSync(record, 'utf8')).toBe('');
  });
});
