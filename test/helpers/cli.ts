import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** The repository root. */
export const ROOT = path.join(import.meta.dirname, '../..');

/** `node` arguments that run a TypeScript entry of this repository from any working directory. */
export function tsNodeArgs(entry: string, args: string[] = []): string[] {
  const tsx = pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
  return ['--import', tsx, path.isAbsolute(entry) ? entry : path.join(ROOT, entry), ...args];
}

/** The newest modification time of the files under `dir` ending in `ext` (0 when there are none). */
function newestMtime(dir: string, ext: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith(ext)) continue;
    newest = Math.max(newest, statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

let distCurrent: boolean | undefined;

/**
 * Whether dist/ was built after the last change to src/ (`npm ci` and `npm run build` build it):
 * then a child runs the installed command, as users do, at a third of the CPU of loading the
 * sources through tsx (the CLI tests start hundreds of children). An edited source makes dist
 * stale and the children run the sources, so a test never runs code older than the tree.
 */
function distIsCurrent(): boolean {
  distCurrent ??=
    existsSync(path.join(ROOT, 'dist/cli.js')) &&
    newestMtime(path.join(ROOT, 'dist'), '.js') >= newestMtime(path.join(ROOT, 'src'), '.ts');
  return distCurrent;
}

/** `node` arguments that run `vcu-sync ARGS`: the built command when it is current, else the sources. */
export function cliArgs(args: string[]): string[] {
  return distIsCurrent() ? [path.join(ROOT, 'bin/vcu-sync.js'), ...args] : tsNodeArgs('src/cli.ts', args);
}

/** What a finished child process said. */
export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs node with `args` to completion in a clean environment (PATH plus `env`), so the developer's
 * own VCU_SYNC_* variables never leak into a test.
 */
export function runNode(args: string[], env: Record<string, string> = {}, cwd?: string): RunResult {
  const result = spawnSync(process.execPath, args, {
    cwd,
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}
