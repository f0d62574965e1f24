import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSync } from '../../src/mirror/syncRun.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { databaseFaultsFor } from '../../src/sqlite/faults.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { tempDir, testContext } from '../helpers/context.js';
import { until } from '../ops/child.js';
import { transfer } from '../outbox/fixtures.js';
import { holdWriteLock, startDaemonChild } from './daemonChild.js';

const PROJECTS = 35;
let sim: Simulator;
const cleanups: Array<() => void> = [];

beforeAll(async () => {
  sim = await startSimulator({ projects: PROJECTS, issuances: 20, units: 40, webhook: { policy: 'none' } });
});
afterAll(async () => {
  await sim.close();
  for (const c of cleanups) c();
});

function read<T>(file: string, sql: string): T {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare(sql).pluck().get() as T;
  } finally {
    db.close();
  }
}

describe('another process holds the write lock', () => {
  it('the daemon keeps answering (liveness, reads, 503 + Retry-After for writes) and, once released, delivers every operation and completes the sync', async () => {
    const { dir, cleanup } = tempDir('vcu-sync-lock-');
    cleanups.push(cleanup);
    const file = path.join(dir, 'vcu.db');
    const daemon = await startDaemonChild(dir, sim.url);
    const { call } = daemon;
    const op = (ref: string, i: number) => transfer(ref, { unitId: 70_000 + i });

    const before = ['lock-0', 'lock-1', 'lock-2'];
    for (const [i, ref] of before.entries())
      expect((await call('POST', '/v1/operations', op(ref, i))).status).toBe(201);

    const holder = await holdWriteLock(file);
    // Held until released below: a daemon that waits on the lock synchronously would not answer at all.
    expect((await fetch(`${daemon.base}/healthz`)).status).toBe(200);
    const list = await call('GET', '/v1/operations?limit=50');
    expect(list.status).toBe(200);
    expect(
      list.json.items.map((e: { marketplaceTransactionRef: string }) => e.marketplaceTransactionRef),
    ).toEqual(expect.arrayContaining(before));
    expect((await call('GET', '/v1/projects?limit=5')).status).toBe(200);
    const status = await call('GET', '/status');
    expect([200, 503]).toContain(status.status);

    const during = ['lock-3', 'lock-4'];
    for (const [i, ref] of during.entries()) {
      const refused = await call('POST', '/v1/operations', op(ref, 3 + i));
      expect(refused.status, refused.text).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.json.error).toMatch(/locked by another process/);
    }
    // A sync asked for now starts once the lock is free.
    expect((await call('POST', '/v1/sync/projects')).status).toBe(202);
    expect(
      read<number>(
        file,
        "SELECT count(*) FROM outbox WHERE marketplaceTransactionRef IN ('lock-3', 'lock-4')",
      ),
    ).toBe(0);

    await holder.release();
    for (const [i, ref] of during.entries()) {
      const again = await call('POST', '/v1/operations', op(ref, 3 + i));
      expect(again.status, again.text).toBe(201);
    }

    const all = [...before, ...during];
    await until('every operation accepted by the operator', () => {
      const accepted = read<number>(file, "SELECT count(*) FROM outbox WHERE state = 'accepted'");
      return accepted === all.length;
    });
    expect(new Set(sim.notifications.map((n) => n.ref))).toEqual(new Set(all));
    await until(
      'the projects sync succeeded',
      () =>
        read<number>(
          file,
          "SELECT count(*) FROM sync_runs WHERE resource = 'projects' AND status = 'succeeded'",
        ) > 0,
    );
    expect(read<number>(file, 'SELECT count(*) FROM projects WHERE _removed_at IS NULL')).toBe(PROJECTS);

    const after = await call('GET', '/status');
    const codes = after.json.problems.map((p: { code: string }) => p.code);
    expect(codes).not.toContain('database-write-failed');
    expect(codes).not.toContain('database-locked');
    expect(await daemon.stop()).toBe(0);
  });
});

describe('a sync run meets the lock between pages', () => {
  it('the run stops, waits for the lock without blocking, resumes from its checkpoint, and the mirror equals upstream', async () => {
    const ctx = testContext({
      overrides: {
        'operator.url': sim.url,
        'operator.api_key': 'sim-api-key',
        'operator.rate_per_second': 100_000,
        'sync.page_size': 10,
        'database.busy_timeout_ms': 20,
      },
    });
    const other = new Database(ctx.database.path);
    try {
      sim.stats.reset();
      sim.faults.setRates({ latencyMs: 30 });
      const run = runSync(ctx, 'projects', { backend: sqliteBackend(ctx.database.sqlite) });
      // Pages are being written when the other process takes the lock: the next commit meets it.
      await until('two pages fetched', () => sim.stats.count('/integration/v1/projects') >= 2);
      other.exec('BEGIN IMMEDIATE');
      // Its record waits for the lock too: what is seen meanwhile is the write that met it.
      await until(
        'a page commit stopped by the lock',
        () => databaseFaultsFor(ctx.database.sqlite).facts().lockedSince !== null,
      );
      other.exec('COMMIT');
      const outcome = await run;
      sim.faults.clear();
      expect(outcome.status, outcome.error ?? '').toBe('succeeded');
      const runs = ctx.database.sqlite
        .prepare(
          "SELECT id, status, error, resumed_from FROM sync_runs WHERE resource = 'projects' ORDER BY id",
        )
        .all() as Array<{ id: number; status: string; error: string | null; resumed_from: number | null }>;
      expect(runs.map((r) => r.status)).toEqual(['failed', 'succeeded']);
      expect(runs[0]!.error).toMatch(/locked/);
      expect(runs[1]!.resumed_from).toBe(runs[0]!.id);
      expect(
        ctx.database.sqlite.prepare('SELECT count(*) FROM projects WHERE _removed_at IS NULL').pluck().get(),
      ).toBe(PROJECTS);
    } finally {
      sim.faults.clear();
      other.close();
      ctx.dispose();
    }
  });
});
