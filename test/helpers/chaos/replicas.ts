import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT } from '../cli.js';
import { freePort } from '../net.js';

/**
 * One replica of the chaos harness: a `vcu-sync run` child process on fixed loopback ports, so a
 * replica started again after a SIGKILL answers where its clients (the producer, the webhook
 * balancer) already send. A port taken meanwhile by another process (a free port is only free when
 * picked) is replaced by a new one, and the clients read the URLs when they send. Its output is kept bounded (the tail, for a failing test's message) and
 * its pino events are counted by name as they arrive.
 */

/** The most output kept per replica process (its tail). */
const OUTPUT_TAIL_CHARS = 200_000;

/** A replica slot: ports and environment that outlive the processes run in it. */
export interface Replica {
  index: number;
  /** The API's base URL now. */
  api(): string;
  /** The webhook listener's base URL now (the operator's path is appended by the balancer). */
  webhookBase(): string;
  /** The running process's lease owner (its `db.opened` event), null before it said so. */
  owner(): string | null;
  /** Whether the current process is running. */
  alive(): boolean;
  /** Every process run in this slot so far: how it ended (null while running). */
  exits(): Array<ReplicaExit | null>;
  /** Times each event name was logged, over every process of this slot. */
  events: Map<string, number>;
  /** The output tail of every process of this slot, oldest first. */
  output(): string;
  /** Starts a process and resolves once its API answers /healthz; throws if it exits first. */
  start(): Promise<void>;
  /** SIGKILLs the running process and resolves once it is gone. */
  kill(): Promise<void>;
  /** SIGTERM (SIGKILL if still running after 30 s); resolves with the exit code (null if killed). */
  stop(): Promise<number | null>;
}

/** Options of {@link replicaSlot}. */
export interface ReplicaOptions {
  index: number;
  /** `node` arguments that run `vcu-sync ARGS` (the sources through tsx, or dist). */
  cliArgs: (args: string[]) => string[];
  env: NodeJS.ProcessEnv;
}

/** How a replica process ended; `killed` when the harness SIGKILLed it on purpose. */
export interface ReplicaExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  killed: boolean;
}

interface RunningProcess {
  child: ChildProcess;
  exited: Promise<number | null>;
  owner: string | null;
  killed: boolean;
  exit: ReplicaExit | null;
}

export function replicaSlot(options: ReplicaOptions): Replica {
  let ports: { api: number; webhook: number } | null = null;
  const pickPorts = async () => {
    ports = { api: await freePort(), webhook: await freePort() };
  };
  const api = () => `http://127.0.0.1:${ports?.api ?? 0}`;
  const runs: RunningProcess[] = [];
  const events = new Map<string, number>();
  let tail = '';
  // CHAOS_LOG_DIR=DIR keeps every line of every replica process in DIR/replica-N.log, to debug a run.
  const logFile =
    process.env.CHAOS_LOG_DIR && path.join(process.env.CHAOS_LOG_DIR, `replica-${options.index}.log`);
  const keep = (text: string) => {
    if (logFile) appendFileSync(logFile, text);
    tail += text;
    if (tail.length > OUTPUT_TAIL_CHARS) tail = tail.slice(-OUTPUT_TAIL_CHARS / 2);
  };
  const current = () => runs.at(-1);
  const alive = () => {
    const run = current();
    return run !== undefined && run.exit === null;
  };

  const spawnProcess = (): RunningProcess => {
    const child = spawn(process.execPath, options.cliArgs(['run']), {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        ...options.env,
        VCU_SYNC_LISTEN: `127.0.0.1:${ports?.api ?? 0}`,
        VCU_SYNC_WEBHOOK_LISTEN: `127.0.0.1:${ports?.webhook ?? 0}`,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const run: RunningProcess = {
      child,
      owner: null,
      killed: false,
      exit: null,
      exited: new Promise((resolve) =>
        child.once('exit', (code, signal) => {
          run.exit = { code, signal, killed: run.killed };
          resolve(code);
        }),
      ),
    };
    keep(`--- replica ${options.index} process ${runs.length + 1} ---\n`);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      keep(`${line}\n`);
      if (!line.startsWith('{')) return;
      try {
        const entry = JSON.parse(line) as { event?: unknown; owner?: unknown };
        if (typeof entry.event !== 'string') return;
        events.set(entry.event, (events.get(entry.event) ?? 0) + 1);
        if (entry.event === 'db.opened' && typeof entry.owner === 'string') run.owner = entry.owner;
      } catch {
        // A line that only looks like JSON: kept in the tail, not counted.
      }
    });
    child.stderr!.on('data', (d: Buffer) => keep(String(d)));
    return run;
  };

  return {
    index: options.index,
    api,
    webhookBase: () => `http://127.0.0.1:${ports?.webhook ?? 0}`,
    owner: () => current()?.owner ?? null,
    alive,
    exits: () => runs.map((r) => r.exit),
    events,
    output: () => tail,
    async start() {
      if (alive()) throw new Error(`replica ${options.index} is running already`);
      if (!ports) await pickPorts();
      for (let attempt = 1; ; attempt++) {
        const run = spawnProcess();
        runs.push(run);
        const deadline = Date.now() + 120_000;
        for (;;) {
          if (run.exit !== null) break;
          const up = await fetch(`${api()}/healthz`).then(
            (r) => r.ok,
            () => false,
          );
          if (up && run.owner !== null) return;
          if (Date.now() > deadline)
            throw new Error(`replica ${options.index} not up after 120 s:\n${tail.slice(-3000)}`);
          await new Promise((r) => setTimeout(r, 50));
        }
        // Not a crash of the daemon's: one of its ports was taken by another process meanwhile.
        if (attempt < 5 && /address already in use/.test(tail.slice(-2000))) {
          run.exit = { ...run.exit, killed: true };
          await pickPorts();
          continue;
        }
        throw new Error(`replica ${options.index} exited while starting:\n${tail.slice(-3000)}`);
      }
    },
    async kill() {
      const run = current();
      if (!run || run.exit !== null) return;
      run.killed = true;
      run.child.kill('SIGKILL');
      await run.exited;
    },
    async stop() {
      const run = current();
      if (!run || run.exit !== null) return run?.exit?.code ?? null;
      run.child.kill('SIGTERM');
      const timer = setTimeout(() => run.child.kill('SIGKILL'), 30_000);
      const code = await run.exited;
      clearTimeout(timer);
      return code;
    },
  };
}
