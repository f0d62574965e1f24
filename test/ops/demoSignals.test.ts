import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/cli.js';
import { tempDir } from '../helpers/context.js';
import { until } from './child.js';

let dir: string;
let cleanup: () => void;

beforeAll(() => {
  ({ dir, cleanup } = tempDir('vcu-sync-demo-signals-'));
});
afterAll(() => cleanup());

/** Outbox rows by state, read from the demo's database while it runs (WAL: readers never block it). */
function outboxStates(file: string): Record<string, number> {
  if (!existsSync(file)) return {};
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare('SELECT state, count(*) AS n FROM outbox GROUP BY state').all() as Array<{
      state: string;
      n: number;
    }>;
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  } catch {
    return {}; // not migrated yet
  } finally {
    db.close();
  }
}

describe('npm run demo and Ctrl-C', () => {
  it('stops gracefully on two SIGINTs to its process group (npm and the node it runs), every operation decided', async () => {
    const file = path.join(dir, 'vcu-sync.db');
    // `npm run demo` itself, in its own process group as a terminal's foreground job is: Ctrl-C
    // signals the whole group, so npm, tsx's parent and the node running the demo each get it, and
    // npm and tsx relay it once more to their child.
    const child = spawn('npm', ['run', 'demo', '--', '--dir', dir], {
      cwd: ROOT,
      detached: true,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, VCU_SYNC_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      output += String(d);
    });
    child.stderr.on('data', (d: Buffer) => {
      output += String(d);
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
    });
    try {
      // Ctrl-C while an operation is in flight: queued or sent and not yet decided.
      await until(
        () => `an undecided operation; output so far:\n${output.slice(-3000)}`,
        () => {
          if (child.exitCode !== null) throw new Error(`demo exited early:\n${output.slice(-3000)}`);
          const states = outboxStates(file);
          return Object.keys(states).some((s) => s !== 'approved' && s !== 'rejected');
        },
        120_000,
      );
      process.kill(-child.pid!, 'SIGINT');
      // The second Ctrl-C lands while the demo settles: it must not cut the graceful stop short.
      await until(
        () => `the demo stopping; output so far:\n${output.slice(-3000)}`,
        () => output.includes('stopping: waiting'),
      );
      process.kill(-child.pid!, 'SIGINT');
      const { code, signal } = await exited;
      expect({ code, signal }, output.slice(-3000)).toEqual({ code: 0, signal: null });
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    }
    expect(output).toContain(`demo stopped; the database stays in ${file}`);
    const states = outboxStates(file);
    expect((states.approved ?? 0) + (states.rejected ?? 0)).toBeGreaterThanOrEqual(1);
    // Nothing left in flight: no `accepted` row to raise decision-overdue on the next run.
    expect(Object.keys(states).filter((s) => s !== 'approved' && s !== 'rejected')).toEqual([]);
  }, 180_000);
});
