import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LogAboveBars } from '../../src/commands/logAboveBars.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { cliArgs, ROOT } from '../helpers/cli.js';
import { tempDir } from '../helpers/context.js';
import { daemonToml, writeToml } from './child.js';

/**
 * `vcu-sync sync` on a terminal draws progress bars on stderr, where its log lines go too. Run in a
 * real pseudo-terminal (util-linux `script`), every log line must come out whole, on a line of its
 * own above the bars, never spliced into a bar; none may be lost.
 */

const { dir, cleanup } = tempDir('vcu-sync-synctty-');
let sim: Simulator;

beforeAll(async () => {
  sim = await startSimulator({ projects: 3000, issuances: 10, units: 10 });
});
afterAll(async () => {
  await sim.close();
  cleanup();
});

const shellQuote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;

/** Runs `vcu-sync ARGS` with a pseudo-terminal as its stdin, stdout and stderr; what the terminal received. */
function inPty(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; screen: string }> {
  const command = [process.execPath, ...cliArgs(args)].map(shellQuote).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, TERM: 'xterm', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let screen = '';
  child.stdout.on('data', (d: Buffer) => {
    screen += String(d);
  });
  child.stderr.on('data', (d: Buffer) => {
    screen += String(d);
  });
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, screen })));
}

/** The terminal's text cut where the cursor goes back to the start of a line; colours removed. */
function segments(screen: string): string[] {
  const esc = String.fromCharCode(27);
  return screen
    .replace(new RegExp(`${esc}\\[[0-9;]*m`, 'g'), '')
    .split(new RegExp(`${esc}\\[1G|${esc}\\[2K|\\r|\\n`))
    .filter((s) => s.trim() !== '');
}

describe('vcu-sync sync on a terminal', () => {
  it('prints each log line whole above the bars, none spliced into a bar, none lost', async () => {
    const { code, screen } = await inPty(['sync', 'projects'], {
      HOME: dir,
      VCU_SYNC_CONFIG: writeToml(dir, daemonToml({ onStartup: false, pageSize: 200 })),
      VCU_SYNC_DB: path.join(dir, 'tty.db'),
      VCU_SYNC_OPERATOR_URL: sim.url,
      VCU_SYNC_API_KEY: 'sim-api-key',
      VCU_SYNC_LOG_LEVEL: 'debug',
    });
    expect(code, screen).toBe(0);
    const parts = segments(screen);
    // The bars were drawn, and the log lines were written in readable form.
    expect(
      parts.some((p) => /^projects\s+\| \d+ records \| \d+ pages/.test(p)),
      screen,
    ).toBe(true);
    const logLines = parts.filter((p) => /^\[\d\d:\d\d:\d\d\.\d{3}\] (DEBUG|INFO|WARN)/.test(p));
    expect(logLines.join('\n'), screen).toMatch(/INFO \(\d+\): sync of projects started/);
    expect(logLines.join('\n')).toMatch(/INFO \(\d+\): sync of projects succeeded/);
    // A log line never shares a terminal line with a bar.
    const spliced = parts.filter(
      (p) => / records \| /.test(p) && /(DEBUG|INFO|WARN) \(\d+\)|event: /.test(p),
    );
    expect(spliced, screen).toEqual([]);
    expect(screen).toContain('projects: succeeded (full) 3000 fetched');
  });
});

describe('LogAboveBars', () => {
  it('hands lines to the bars while they are drawn, redraws once before they stop, then writes directly', () => {
    const written: string[] = [];
    const logged: string[] = [];
    let redraws = 0;
    const bars = {
      log: (s: string) => logged.push(s),
      update: () => {
        redraws++;
      },
    };
    const out = new LogAboveBars({ write: (s: string) => written.push(s) > 0 }, (line) => `> ${line}`);
    out.write('before\n');
    out.attach(bars);
    out.write('during');
    out.detach();
    out.write('after\n');
    expect(written).toEqual(['> before\n', '> after\n']);
    expect(logged).toEqual(['> during\n']);
    expect(redraws).toBe(1);
  });
});
