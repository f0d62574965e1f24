import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_WEBHOOK_SECRET } from '../../src/simulator/index.js';
import { cliArgs, ROOT } from '../helpers/cli.js';

/** A `vcu-sync` child process with its output collected. */
export interface CliChild {
  child: ChildProcess;
  /** stdout and stderr as received so far. */
  output(): string;
  /** pino lines of stdout, parsed (non-JSON lines skipped). */
  events(): Array<Record<string, unknown>>;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

/**
 * Runs `vcu-sync ARGS` (test/helpers/cli.ts `cliArgs`) with exactly `env` (plus PATH unless given);
 * as another user when `as` is given (tests running as root use it to meet file permissions for
 * real); `nodeFlags` go to node before the command, as a service unit's ExecStart may put them.
 */
export function spawnCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  as?: { uid: number; gid: number },
  nodeFlags: readonly string[] = [],
): CliChild {
  const child = spawn(process.execPath, [...nodeFlags, ...cliArgs(args)], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...as,
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += String(d);
  });
  child.stderr!.on('data', (d: Buffer) => {
    out += String(d);
  });
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
  });
  return {
    child,
    output: () => out,
    events: () =>
      out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .flatMap((l) => {
          try {
            return [JSON.parse(l) as Record<string, unknown>];
          } catch {
            return [];
          }
        }),
    exited,
  };
}

/**
 * Polls `check` until it holds. Bounded by real time only as a safety net; the condition is what
 * the test waits for, never time passing.
 */
export async function until(
  what: string | (() => string),
  check: () => boolean | Promise<boolean>,
  timeoutMs = 45_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Waits for a pino line with this `event` in the child's output; fails at once if the child exits. */
export function untilEvent(c: CliChild, event: string, timeoutMs?: number): Promise<void> {
  return until(
    () => `event ${event}; output so far:\n${c.output().slice(-3000)}`,
    () => {
      if (c.events().some((e) => e.event === event)) return true;
      if (c.child.exitCode !== null || c.child.signalCode !== null)
        throw new Error(`child exited before ${event}:\n${c.output().slice(-3000)}`);
      return false;
    },
    timeoutMs,
  );
}

/** Writes a TOML config file into `dir` and returns its path. */
export function writeToml(dir: string, toml: string): string {
  const file = path.join(dir, 'vcu-sync.toml');
  writeFileSync(file, toml);
  return file;
}

/**
 * A daemon config for tests: no schedules (runs happen only when asked or at start-up), no jitter,
 * fast polls, no operator rate limit, listeners on free loopback ports.
 */
export function daemonToml(opts: { onStartup: boolean; pageSize?: number; extra?: string }): string {
  return `
[sync]
on_startup = ${opts.onStartup}
jitter_seconds = 0
page_size = ${opts.pageSize ?? 200}
units_overlap = 10
page_attempts = 2
retry_cap_ms = 200

[sync.schedule]
projects = "off"
issuances = "off"
units = "off"
custody = "off"

[operator]
rate_per_second = 100000
timeout_ms = 20000

[outbox]
poll_ms = 20
concurrency = 4
backoff_base_ms = 50
backoff_cap_ms = 200
${opts.extra ?? ''}
`;
}

/** The environment of a child daemon pointed at `simUrl` with its database in `dir`. */
export function daemonEnv(
  dir: string,
  simUrl: string,
  configFile: string,
  extra: NodeJS.ProcessEnv = {},
): NodeJS.ProcessEnv {
  return {
    VCU_SYNC_CONFIG: configFile,
    VCU_SYNC_DB: path.join(dir, 'vcu.db'),
    VCU_SYNC_OPERATOR_URL: simUrl,
    VCU_SYNC_API_KEY: 'sim-api-key',
    VCU_SYNC_MARKETPLACE_ID: 'mkt-ops',
    VCU_SYNC_API_TOKEN: 'ops-test-token-0123456789',
    VCU_SYNC_LISTEN: '127.0.0.1:0',
    VCU_SYNC_WEBHOOK_LISTEN: '127.0.0.1:0',
    VCU_SYNC_WEBHOOK_SECRET: DEFAULT_WEBHOOK_SECRET,
    VCU_SYNC_LOG_LEVEL: 'info',
    ...extra,
  };
}
