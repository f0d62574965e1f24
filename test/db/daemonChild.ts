import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { apiCaller } from '../helpers/http.js';
import {
  type CliChild,
  daemonEnv,
  daemonToml,
  spawnCli,
  until,
  untilEvent,
  writeToml,
} from '../ops/child.js';

export const TOKEN = 'ops-test-token-0123456789';

/** A `vcu-sync run` child on a database in `dir`, with its internal API ready to call. */
export interface DaemonChild {
  cli: CliChild;
  base: string;
  call: ReturnType<typeof apiCaller>;
  stop(): Promise<number | null>;
}

/** Starts the daemon (as another user when `as` is given) and waits until it serves. */
export async function startDaemonChild(
  dir: string,
  simUrl: string,
  options: { extraToml?: string; as?: { uid: number; gid: number } } = {},
): Promise<DaemonChild> {
  const toml = writeToml(dir, daemonToml({ onStartup: false, extra: options.extraToml }));
  const cli = spawnCli(['run'], daemonEnv(dir, simUrl, toml), options.as);
  await untilEvent(cli, 'daemon.ready');
  const listening = cli.events().find((e) => e.event === 'api.listening');
  const base = `http://${String(listening?.listen)}`;
  return {
    cli,
    base,
    call: apiCaller(base, TOKEN),
    async stop() {
      if (cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill('SIGTERM');
      return await cli.exited;
    },
  };
}

/** Another process holding the database's write lock (BEGIN IMMEDIATE) until `release()`. */
export interface LockHolder {
  child: ChildProcess;
  release(): Promise<void>;
}

const HOLDER = `
const Database = require(process.argv[1]);
const db = new Database(process.argv[2]);
db.exec('BEGIN IMMEDIATE');
process.stdout.write('locked\\n');
process.stdin.once('data', () => {
  db.exec('ROLLBACK');
  db.close();
  process.stdout.write('released\\n');
  process.exit(0);
});
`;

export async function holdWriteLock(file: string): Promise<LockHolder> {
  const module = createRequire(import.meta.url).resolve('better-sqlite3');
  const child = spawn(process.execPath, ['-e', HOLDER, module, file], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => {
    out += String(d);
  });
  child.stderr!.on('data', (d: Buffer) => {
    out += String(d);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await until(
    () => `the lock holder to lock: ${out}`,
    () => {
      if (child.exitCode !== null) throw new Error(`lock holder exited: ${out}`);
      return out.includes('locked');
    },
  );
  return {
    child,
    async release() {
      child.stdin!.write('release\n');
      await exited;
      if (!out.includes('released')) throw new Error(`lock holder did not release: ${out}`);
    },
  };
}
