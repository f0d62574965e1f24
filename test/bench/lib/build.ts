import { existsSync } from 'node:fs';
import path from 'node:path';
import { ROOT, spawnNode, tsx } from './proc.js';

/** How the CLI is run in child processes: the compiled dist (production) or the sources via tsx. */
export interface CliRunner {
  kind: 'dist' | 'tsx';
  /** `node` arguments that run `vcu-sync ARGS`. */
  args(cliArgs: string[], preload?: string[]): string[];
}

let cached: Promise<CliRunner> | undefined;

/**
 * Builds dist once (`tsc -p tsconfig.build.json`) unless quick; quick runs, and a build that fails,
 * use the sources through tsx (the report says which).
 */
export function cliRunner(quick: boolean, say: (line: string) => void): Promise<CliRunner> {
  cached ??= (async (): Promise<CliRunner> => {
    const fromSources: CliRunner = {
      kind: 'tsx',
      args: (a, preload = []) => [...preload.flatMap((p) => ['--import', p]), ...tsx('src/cli.ts', a)],
    };
    if (quick) return fromSources;
    say('building dist (npm run build)');
    const tscBin = path.join(ROOT, 'node_modules/typescript/bin/tsc');
    const build = spawnNode([tscBin, '-p', 'tsconfig.build.json']);
    const code = await build.exited;
    if (code !== 0 || !existsSync(path.join(ROOT, 'dist/cli.js'))) {
      say(`build failed (${code}); using the sources through tsx: ${build.lines.slice(0, 5).join(' / ')}`);
      return fromSources;
    }
    return {
      kind: 'dist',
      args: (a, preload = []) => [
        ...preload.flatMap((p) => ['--import', p]),
        // The installed command, exactly as systemd runs it.
        path.join(ROOT, 'bin/vcu-sync.js'),
        ...a,
      ],
    };
  })();
  return cached;
}
