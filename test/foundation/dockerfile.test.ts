import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi } from '../api/apiHarness.js';
import { ROOT } from '../helpers/cli.js';

/**
 * The container image definition, linted: no Docker engine here (nor hadolint), so the Dockerfile
 * is parsed and held to what the image must be. CI builds it where an engine exists (.ci/run).
 */

/** One instruction: its keyword and its arguments, continuation lines joined. */
interface Instruction {
  keyword: string;
  args: string;
}

/** The Dockerfile's instructions, grouped by build stage (each starting at its FROM). */
function stages(text: string): Instruction[][] {
  const joined = text.replace(/\\\n/g, ' ');
  const instructions = joined
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const [keyword = '', ...rest] = line.split(/\s+/);
      return { keyword: keyword.toUpperCase(), args: rest.join(' ') };
    });
  const out: Instruction[][] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM') out.push([]);
    out.at(-1)?.push(instruction);
  }
  return out;
}

/** Exec-form arguments (`["node", "bin/x.js"]`) of an instruction. */
function execForm(args: string): string[] {
  return JSON.parse(args) as string[];
}

const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
const all = stages(dockerfile);
const final = all.at(-1) ?? [];
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  devDependencies: Record<string, string>;
};
const of = (stage: Instruction[], keyword: string) => stage.filter((i) => i.keyword === keyword);

describe('Dockerfile', () => {
  it('every stage is on the Node that package.json pins (devDependencies.node)', () => {
    const pinned = pkg.devDependencies.node ?? '';
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
    expect(all.length).toBeGreaterThanOrEqual(1);
    for (const stage of all) {
      const image = stage[0]!.args.split(/\s+/)[0]!;
      expect(image).toMatch(new RegExp(`^node:${pinned.replaceAll('.', '\\.')}-[a-z0-9-]+$`));
    }
  });

  it('installs exactly from the lockfile with npm ci, and copies only paths that exist', () => {
    const runs = all.flat().filter((i) => i.keyword === 'RUN');
    expect(runs.some((r) => /\bnpm ci\b/.test(r.args))).toBe(true);
    expect(runs.some((r) => /\bnpm install\b/.test(r.args))).toBe(false);
    const copies = all.flat().filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from='));
    expect(copies.map((c) => c.args)).toContainEqual(expect.stringContaining('package-lock.json'));
    for (const copy of copies) {
      const sources = copy.args.split(/\s+/).slice(0, -1);
      for (const source of sources) expect(existsSync(path.join(ROOT, source)), source).toBe(true);
    }
    // The host's node_modules and builds never enter the context: the image installs its own.
    const ignored = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n');
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'dist', '.git', '*.db']));
  });

  it('runs the daemon as a non-root user, listening on the two ports it exposes', () => {
    const users = of(final, 'USER');
    expect(users.length).toBeGreaterThan(0);
    const user = users.at(-1)!.args;
    expect(user).not.toMatch(/^(root|0)(:|$)/);
    // Nothing after the switch runs as root again.
    const lastUser = final.lastIndexOf(users.at(-1)!);
    expect(final.slice(lastUser).filter((i) => i.keyword === 'RUN')).toEqual([]);

    const exposed = of(final, 'EXPOSE').flatMap((e) => e.args.split(/\s+/));
    const env = of(final, 'ENV')
      .map((e) => e.args)
      .join(' ');
    const port = (variable: string) => new RegExp(`${variable}=0\\.0\\.0\\.0:(\\d+)`).exec(env)?.[1];
    expect(port('VCU_SYNC_LISTEN')).toBeDefined();
    expect(port('VCU_SYNC_WEBHOOK_LISTEN')).toBeDefined();
    expect(exposed.sort()).toEqual([port('VCU_SYNC_LISTEN'), port('VCU_SYNC_WEBHOOK_LISTEN')].sort());

    const entrypoint = execForm(of(final, 'ENTRYPOINT').at(-1)!.args);
    const cmd = execForm(of(final, 'CMD').at(-1)!.args);
    expect([...entrypoint, ...cmd]).toEqual(['node', 'bin/vcu-sync.js', 'run']);
  });

  describe('HEALTHCHECK', () => {
    const healthcheck = of(final, 'HEALTHCHECK').at(-1)?.args ?? '';
    const command = execForm(healthcheck.slice(healthcheck.indexOf('CMD ') + 4));
    let api: Awaited<ReturnType<typeof startApi>>;
    beforeAll(async () => {
      api = await startApi();
    });
    afterAll(async () => {
      await api?.close();
    });

    /**
     * Runs the HEALTHCHECK's command here, pointed at `base` instead of the container's API; its
     * exit code. Not spawnSync: the API answering it runs in this process's event loop.
     */
    function probe(base: string): Promise<number | null> {
      const env = of(final, 'ENV')
        .map((e) => e.args)
        .join(' ');
      const apiPort = /VCU_SYNC_LISTEN=0\.0\.0\.0:(\d+)/.exec(env)![1];
      const target = `http://127.0.0.1:${apiPort}`;
      expect(command.join(' ')).toContain(`${target}/healthz`);
      const [program, ...args] = command.map((a) => a.replace(target, base));
      expect(program).toBe('node');
      return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, args, { stdio: 'ignore' });
        child.once('error', reject);
        child.once('exit', (code) => resolve(code));
      });
    }

    it('asks the API it exposes for /healthz, and passes against a real one', async () => {
      expect(await probe(api.base)).toBe(0);
    });

    it('fails when nothing answers there', async () => {
      // A port just freed: nothing listens on it.
      const closed = await startApi();
      const base = closed.base;
      await closed.close();
      expect(await probe(base)).toBe(1);
    });
  });
});
