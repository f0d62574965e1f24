import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { ROOT, runNode } from '../helpers/cli.js';

/** The newest modification time under a folder. */
function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(full) : statSync(full).mtimeMs);
  }
  return latest;
}

// The installed command runs the compiled dist, as systemd does: build it when it is missing or stale.
beforeAll(() => {
  const cli = path.join(ROOT, 'dist/cli.js');
  if (existsSync(cli) && statSync(cli).mtimeMs >= newest(path.join(ROOT, 'src'))) return;
  const build = spawnSync(
    process.execPath,
    [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
    {
      cwd: ROOT,
      encoding: 'utf8',
    },
  );
  expect(build.status, build.stdout + build.stderr).toBe(0);
}, 300_000);

const bin = (args: string[]) => runNode([path.join(ROOT, 'bin/vcu-sync.js'), ...args]);

describe('bin/vcu-sync.js (the installed command)', () => {
  it('runs the CLI: help lists the commands', () => {
    const { code, stdout } = bin(['--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^\s+run\b/m);
    expect(stdout).toMatch(/^\s+status\b/m);
  });

  it('passes exit codes through: a config error is 78 with one line', () => {
    const { code, stderr } = bin(['config', 'check', '--config', '/nonexistent/vcu-sync.toml']);
    expect(code).toBe(78);
    expect(stderr.trim()).toBe(
      'vcu-sync: config: cannot read config file /nonexistent/vcu-sync.toml: ENOENT',
    );
  });
});
