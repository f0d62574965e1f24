import { existsSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/context.js';
import { daemonEnv, daemonToml, spawnCli, writeToml } from '../ops/child.js';

/**
 * `vcu-sync run` with a listen port another process holds: one line naming the key, its variable
 * and the port, exit 78, and the database neither created nor migrated (checked before it is opened).
 */

const { dir: root, cleanup } = tempDir('vcu-sync-preflight-');
let holder: Server;
let heldPort: number;

beforeAll(async () => {
  holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  heldPort = (holder.address() as { port: number }).port;
});
afterAll(async () => {
  await new Promise((resolve) => holder.close(resolve));
  cleanup();
});

let counter = 0;
async function run(extra: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string; dir: string }> {
  const dir = path.join(root, `d${++counter}`);
  const conf = tempDir('vcu-sync-preflight-conf-');
  try {
    const env = daemonEnv(
      dir,
      'http://127.0.0.1:1',
      writeToml(conf.dir, daemonToml({ onStartup: false })),
      extra,
    );
    const child = spawnCli(['run'], { HOME: root, ...env });
    return { code: await child.exited, output: child.output(), dir };
  } finally {
    conf.cleanup();
  }
}

describe('vcu-sync run checks its ports before it touches the database', () => {
  it('api.listen in use: one line naming the key, its variable and the port, exit 78, no database', async () => {
    const { code, output, dir } = await run({ VCU_SYNC_LISTEN: `127.0.0.1:${heldPort}` });
    expect(code, output).toBe(78);
    expect(output.trim().split('\n')).toEqual([
      `vcu-sync: config: api.listen 127.0.0.1:${heldPort}: cannot listen (address already in use: another process listens on port ${heldPort}; stop it or choose another api.listen (or VCU_SYNC_LISTEN))`,
    ]);
    expect(existsSync(dir) ? readdirSync(dir) : []).toEqual([]);
  });

  it('webhook.listen in use: names webhook.listen and VCU_SYNC_WEBHOOK_LISTEN', async () => {
    const { code, output, dir } = await run({ VCU_SYNC_WEBHOOK_LISTEN: `127.0.0.1:${heldPort}` });
    expect(code, output).toBe(78);
    expect(output).toContain(`webhook.listen 127.0.0.1:${heldPort}: cannot listen (address already in use`);
    expect(output).toContain('(or VCU_SYNC_WEBHOOK_LISTEN)');
    expect(existsSync(dir) ? readdirSync(dir) : []).toEqual([]);
  });

  it('both keys on one address: refused before either listens', async () => {
    // A port free a moment ago, so the first key's own check passes (any user may bind it).
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const free = (probe.address() as { port: number }).port;
    await new Promise((resolve) => probe.close(resolve));
    const { code, output } = await run({
      VCU_SYNC_LISTEN: `127.0.0.1:${free}`,
      VCU_SYNC_WEBHOOK_LISTEN: `127.0.0.1:${free}`,
    });
    expect(code, output).toBe(78);
    expect(output.trim()).toBe(
      `vcu-sync: config: webhook.listen 127.0.0.1:${free}: the same address as api.listen; give each its own port`,
    );
  });
});
