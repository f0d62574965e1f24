import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tsNodeArgs } from './helpers/cli.js';
import { tempDir } from './helpers/context.js';

/** Every scenario of issue 7 has a row starting with one of these. */
const ROWS = [
  'full sync (',
  'full sync against max(fetch-only, write-only)',
  'schema learning on against off',
  're-sync, nothing changed',
  'incremental units after +1%',
  'unit operations served unpaginated',
  'unit operations in one unpaginated body',
  'outbox drain,',
  'enqueue at 500 req/s, dispatcher paused',
  'enqueue at 500 req/s, dispatcher draining',
  'enqueue at 500 req/s, bare handler + durable insert',
  'enqueue at 500 req/s, full sync writing',
  'verified webhooks',
  'verified webhooks against a bare durable insert',
  'start-up with a',
  'long-poll wake-up, 200 waiting clients',
  'feed readers (',
  'subscriber deliveries,',
];

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, tsNodeArgs('test/bench/run.ts', args), {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('npm run bench -- --quick', () => {
  it('prints a row with numeric figures for every scenario and writes the JSON results', async () => {
    const { dir, cleanup } = tempDir('vcu-sync-bench-test-');
    try {
      const { code, stdout, stderr } = await run(['--quick', '--out', dir]);
      expect(code, stderr.slice(-3000)).toBe(0);
      const rows = stdout
        .split('\n')
        .filter((l) => l.startsWith('| ') && !l.startsWith('| scenario'))
        .map((l) =>
          l
            .split('|')
            .slice(1, -1)
            .map((c) => c.trim()),
        );
      for (const prefix of ROWS) {
        const row = rows.find((r) => r[0]!.startsWith(prefix) || r[0]!.includes(prefix));
        expect(row, `row ${prefix}`).toBeDefined();
        expect(Number(row![2]!.replaceAll(',', '')), `${prefix} figure`).not.toBeNaN();
        expect(row![6], `${prefix} met column`).toMatch(/^(yes|NO)$/);
      }
      expect(existsSync(path.join(dir, 'latest.json'))).toBe(true);
      const files = readdirSync(dir).filter((f) => /^bench-quick-.*\.json$/.test(f));
      expect(files).toHaveLength(1);
      const report = JSON.parse(readFileSync(path.join(dir, files[0]!), 'utf8')) as {
        machine: { cpu: string; cores: number; memoryGiB: number; node: string };
        results: Array<{ scenario: string; value: number }>;
        failures: string[];
      };
      expect(report.failures).toEqual([]);
      expect(report.machine.cores).toBeGreaterThan(0);
      expect(report.machine.node).toBe(process.version);
      expect(report.results.length).toBe(rows.length);
      for (const r of report.results) expect(Number.isFinite(r.value), r.scenario).toBe(true);
    } finally {
      cleanup();
    }
    // A hang guard: about a minute quiet, over three when every core is busy.
  }, 300_000);
});
