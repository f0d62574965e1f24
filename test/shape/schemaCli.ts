import { spawnCli } from '../ops/child.js';

/** What one `vcu-sync` child said: its exit code, stdout, and stderr without pino's JSON lines. */
export interface CliRun {
  code: number | null;
  stdout: string;
  said: string;
}

/** Runs `vcu-sync ARGS` to its end with exactly `env` (the built command when dist/ is current). */
export async function vcuSync(args: string[], env: NodeJS.ProcessEnv): Promise<CliRun> {
  const c = spawnCli(args, env);
  let stdout = '';
  let stderr = '';
  c.child.stdout!.on('data', (d: Buffer) => {
    stdout += String(d);
  });
  c.child.stderr!.on('data', (d: Buffer) => {
    stderr += String(d);
  });
  const code = await c.exited;
  const said = stderr
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('{"'))
    .join('\n');
  return { code, stdout, said };
}

/** The line of a printed table whose cells start with `cells`, split on runs of spaces. */
export function tableLine(text: string, ...cells: string[]): string[] | undefined {
  return text
    .split('\n')
    .map((l) => l.trim().split(/\s{2,}/))
    .find((row) => cells.every((c, i) => row[i] === c));
}
