import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { issuanceIdOf } from './bench/lib/reconcileSeed.js';
import { TINY, TINY_FINDINGS } from './bench/lib/reconcileTiny.js';
import { measure, seedSqlite } from './bench/reconcile.js';
import { tsNodeArgs } from './helpers/cli.js';
import { tempDir } from './helpers/context.js';

/**
 * The reconciliation bench (`npm run bench -- --only reconcile`) at a tiny size: its books hold
 * exactly the inconsistencies it seeds, so a pass measured over them records real findings, and the
 * scenario prints its rows.
 */

function runBench(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
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

describe('the reconciliation bench', () => {
  it('seeds books whose full pass finds exactly the inconsistencies put in, on SQLite', async () => {
    const { dir, cleanup } = tempDir('vcu-sync-bench-reconcile-');
    try {
      const file = path.join(dir, 'books.db');
      seedSqlite(file, TINY);
      const job = {
        dialect: 'sqlite' as const,
        target: file,
        runs: 2,
        scope: [issuanceIdOf(3), issuanceIdOf(5)],
      };
      const report = await measure({ ...job, mode: 'measure' });
      expect(report.openedByKind).toEqual(TINY_FINDINGS);
      // Two passes later the same ten findings are open: nothing resolved, nothing doubled.
      expect(report.open).toBe(10);
      expect(report.operations).toBe(TINY.outbox);
      // The ledger join, and every retirement in the log (200, four spelled RETIRED).
      expect(report.baselineRows).toEqual([TINY.outbox, 200]);
      for (const series of [report.catchUp, report.baseline, report.full, report.scoped]) {
        expect(series).toHaveLength(2);
        for (const s of series) expect(s).toBeGreaterThan(0);
      }
      const rss = await measure({ ...job, mode: 'rss' });
      expect(rss.open).toBe(10);
      expect(rss.peakRssMb).toBeGreaterThan(0);
    } finally {
      cleanup();
    }
  }, 180_000);

  it('npm run bench -- --quick --only reconcile prints its rows with figures', async () => {
    const { dir, cleanup } = tempDir('vcu-sync-bench-reconcile-');
    try {
      const { code, stdout, stderr } = await runBench(['--quick', '--only', 'reconcile', '--out', dir]);
      expect(code, stderr.slice(-3000)).toBe(0);
      const rows = stdout
        .split('\n')
        .filter((l) => l.startsWith('| reconciliation'))
        .map((l) =>
          l
            .split('|')
            .slice(1, -1)
            .map((c) => c.trim()),
        );
      const names = rows.map((r) => r[0]!);
      for (const prefix of [
        'reconciliation full pass, SQLite',
        'reconciliation ledger catch-up, SQLite',
        'reconciliation scoped pass (10 issuances), SQLite',
        'reconciliation full pass peak RSS, SQLite',
      ]) {
        const row = rows.find((r) => r[0]!.startsWith(prefix));
        expect(row, `${prefix} in ${names.join(' / ')}`).toBeDefined();
        expect(Number(row![2]!.replaceAll(',', '')), `${prefix} figure`).toBeGreaterThan(0);
        expect(row![6]).toMatch(/^(yes|NO)$/);
      }
    } finally {
      cleanup();
    }
  }, 300_000);
});
