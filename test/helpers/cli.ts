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
