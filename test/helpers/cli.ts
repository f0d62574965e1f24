import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** The repository root. */
export const ROOT = path.join(import.meta.dirname, '../..');

/** `node` arguments that run a TypeScript entry of this repository from any working directory. */
export function tsNodeArgs(entry: string, args: string[] = []): string[] {
  const tsx = pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
  return ['--import', tsx, path.isAbsolute(entry) ? entry : path.join(ROOT, entry), ...args];
}

/** `node` arguments that run `vcu-sync ARGS` from the sources. */
export function cliArgs(args: string[]): string[] {
  return tsNodeArgs('src/cli.ts', args);
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
