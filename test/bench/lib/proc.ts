import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

/** The repository root. */
export const ROOT = path.join(import.meta.dirname, '../../..');

/** `node` arguments that run a TypeScript file of this repository through tsx. */
export function tsx(entry: string, args: string[] = []): string[] {
  const loader = pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
  return ['--import', loader, path.isAbsolute(entry) ? entry : path.join(ROOT, entry), ...args];
}

/** A child process whose stdout lines can be awaited. */
export interface Child {
  proc: ChildProcess;
  /** Resolves with the first stdout line matching `re` (its match), rejects if the child exits first. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Every stdout line so far. */
  lines: string[];
  /** stderr so far (kept for error messages). */
  stderr(): string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

/** Spawns `node ARGS` with the repository as working directory. */
export function spawnNode(args: string[], env: NodeJS.ProcessEnv = {}): Child {
  // BENCH_CPU_PROF_DIR=DIR profiles every child (node --cpu-prof), to find where a target is missed.
  const prof = process.env.BENCH_CPU_PROF_DIR;
  const profArgs = prof ? ['--cpu-prof', '--cpu-prof-dir', prof] : [];
  const proc = spawn(process.execPath, [...profArgs, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
    if (err.length > 200_000) err = err.slice(-100_000);
  });
  const waiters: Array<{ re: RegExp; resolve: (m: RegExpMatchArray) => void }> = [];
  createInterface({ input: proc.stdout! }).on('line', (line) => {
    lines.push(line);
    for (const w of [...waiters]) {
      const m = line.match(w.re);
      if (m) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(m);
      }
    }
  });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return {
    proc,
    lines,
    stderr: () => err,
    exited,
    waitFor(re, timeoutMs = 120_000) {
      const seen = lines.map((l) => l.match(re)).find((m) => m);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`timed out waiting for ${re}: ${err.slice(-2000)}`)),
          timeoutMs,
        );
        waiters.push({
          re,
          resolve: (m) => {
            clearTimeout(timer);
            resolve(m);
          },
        });
        void exited.then((code) => {
          clearTimeout(timer);
          reject(new Error(`child exited (${code}) before printing ${re}: ${err.slice(-2000)}`));
        });
      });
    },
    async stop(graceMs = 5_000) {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Runs a child to its end; its last stdout line is parsed as JSON. */
export async function runJsonChild<T>(args: string[], env: NodeJS.ProcessEnv = {}): Promise<T> {
  const child = spawnNode(args, env);
  const code = await child.exited;
  const last = child.lines.filter((l) => l.trim() !== '').at(-1);
  if (code !== 0 || last === undefined) {
    throw new Error(`child ${args.join(' ')} exited ${code}: ${child.stderr().slice(-3000)}`);
  }
  return JSON.parse(last) as T;
}

/**
 * Resolves once the daemon's API answers `/healthz` (any status below 500); throws if the child
 * exits first or nothing answers within 60 s. Polls every `pollMs` (default 20).
 */
export async function waitForHealthz(child: Child, apiPort: number, pollMs = 20): Promise<void> {
  const start = performance.now();
  for (;;) {
    if (child.proc.exitCode !== null) throw new Error(`daemon exited: ${child.stderr().slice(-2000)}`);
    if (performance.now() - start > 60_000) throw new Error('daemon API not up after 60 s');
    const up = await fetch(`http://127.0.0.1:${apiPort}/healthz`).then(
      (r) => r.status < 500,
      () => false,
    );
    if (up) return;
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
