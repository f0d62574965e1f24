import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteContext } from '../../src/app/sqliteStores.js';
import { silentLogger } from '../../src/common/log.js';
import { loadConfig } from '../../src/config/config.js';
import { createDispatcherComponent } from '../../src/outbox/dispatcher.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { tempDir } from '../helpers/context.js';
import { capturingLogger, enqueueOperation, sqliteDispatcher, transfer } from '../outbox/fixtures.js';
import { dispatchContext, rows } from '../outbox/harness.js';
import { daemonEnv, daemonToml, spawnCli, until, untilEvent, writeToml } from './child.js';

const UNITS = 6_000;
let sim: Simulator;
const dirs: Array<() => void> = [];

beforeAll(async () => {
  sim = await startSimulator({ units: UNITS, webhook: { policy: 'none' } });
});
afterAll(async () => {
  await sim.close();
  for (const cleanup of dirs) cleanup();
});

/**
 * Safety nets for tests of child daemons, not speed targets: under a loaded CPU a child took 11 s
 * from its listeners to its dispatcher thread and over 45 s to its first pages, past the defaults.
 */
const CHILD_WAIT_MS = 240_000;
const CHILD_TEST_MS = 600_000;

function workDir(): string {
  const { dir, cleanup } = tempDir('vcu-sync-ops-');
  dirs.push(cleanup);
  return dir;
}

/** The WAL must have been folded into the database file by the stop. */
function expectWalCheckpointed(db: string): void {
  const wal = `${db}-wal`;
  expect(!existsSync(wal) || statSync(wal).size === 0, `${wal} is empty or absent`).toBe(true);
}

describe('vcu-sync run: SIGTERM', () => {
  it(
    'mid-drain: in-flight notifications finish, no lease is left, nothing is lost, WAL checkpointed',
    async () => {
      const dir = workDir();
      const dbFile = path.join(dir, 'vcu.db');
      const config = loadConfig({
        env: { VCU_SYNC_DB: dbFile },
        overrides: { 'operator.marketplace_id': 'mkt-ops' },
      });
      const seed = openSqliteContext(config, silentLogger);
      const refs = Array.from({ length: 100 }, (_, i) => `drain-${i}`);
      for (const [i, ref] of refs.entries()) {
        expect(enqueueOperation(seed, transfer(ref, { unitId: 90_000 + i })).status).toBe(201);
      }
      seed.database.close();

      sim.faults.clear();
      sim.notifications.length = 0;
      // Every notification is slow (well inside the stop's 10 s grace): those in flight when SIGTERM
      // lands finish, and the queue takes a minute to drain, so work is left however slowly a loaded
      // machine lets this test send the signal (150 ms each drained 40 rows before it, under load).
      sim.faults.setRates({ latencyMs: 2_500 });

      const run = spawnCli(
        ['run'],
        daemonEnv(dir, sim.url, writeToml(dir, daemonToml({ onStartup: false }))),
      );
      await untilEvent(run, 'daemon.ready');
      await until('a first notification answered', () => sim.notifications.length >= 1);
      run.child.kill('SIGTERM');
      const code = await run.exited;
      sim.faults.clear();
      expect(code, run.output().slice(-3000)).toBe(0);

      const events = run.events().map((e) => e.event);
      expect(events).toContain('daemon.stopped');
      // The slow ones finished inside the grace period: nothing had to be cancelled.
      expect(events).not.toContain('outbox.stop.cancelling');

      expectWalCheckpointed(dbFile);
      const db = new Database(dbFile, { readonly: true });
      try {
        const stored = db
          .prepare('SELECT marketplaceTransactionRef AS ref, state, lease_owner FROM outbox')
          .all() as Array<{ ref: string; state: string; lease_owner: string | null }>;
        expect(stored.map((r) => r.ref).sort()).toEqual([...refs].sort());
        expect(stored.filter((r) => r.lease_owner !== null)).toEqual([]);
        const accepted = new Set(stored.filter((r) => r.state === 'accepted').map((r) => r.ref));
        const queued = stored.filter((r) => r.state === 'queued');
        expect(accepted.size + queued.length).toBe(refs.length);
        // Every request the operator answered is recorded as accepted, the slow ones included.
        const received = new Set(sim.notifications.map((n) => n.ref));
        expect(received.size).toBeGreaterThanOrEqual(4);
        expect([...received].sort()).toEqual([...accepted].sort());
        // The stop stopped claiming: work remains for the next start.
        expect(queued.length).toBeGreaterThan(0);
      } finally {
        db.close();
      }
    },
    CHILD_TEST_MS,
  );

  it(
    'a SIGINT and a SIGTERM more during the graceful stop are noted and do not cut it short',
    async () => {
      const dir = workDir();
      const dbFile = path.join(dir, 'vcu.db');
      const config = loadConfig({
        env: { VCU_SYNC_DB: dbFile },
        overrides: { 'operator.marketplace_id': 'mkt-ops' },
      });
      const seed = openSqliteContext(config, silentLogger);
      expect(enqueueOperation(seed, transfer('repeat-1', { unitId: 92_001 })).status).toBe(201);
      seed.database.close();

      sim.faults.clear();
      sim.notifications.length = 0;
      // The one notification outlasts the dispatcher's 10 s grace: the stop is still running when
      // the further signals land, and ends by cancelling it (or, when a loaded machine delays the
      // stop past operator.timeout_ms, by the request's timeout: the row is queued again either way).
      sim.faults.next(1, 'latency', { latencyMs: 60_000, pathPrefix: '/integration/v1/notify' });
      const run = spawnCli(
        ['run'],
        daemonEnv(dir, sim.url, writeToml(dir, daemonToml({ onStartup: false }))),
      );
      await untilEvent(run, 'daemon.ready');
      const db = new Database(dbFile, { readonly: true });
      try {
        await until(
          'the row claimed',
          () => db.prepare("SELECT 1 FROM outbox WHERE state = 'sending'").get() !== undefined,
        );
      } finally {
        db.close();
      }
      run.child.kill('SIGINT');
      await untilEvent(run, 'daemon.stopping');
      run.child.kill('SIGINT');
      run.child.kill('SIGTERM');
      await untilEvent(run, 'daemon.stop.signal_repeated');
      const code = await run.exited;
      sim.faults.clear();
      expect({ code, signal: run.child.signalCode }, run.output().slice(-3000)).toEqual({
        code: 0,
        signal: null,
      });
      const events = run.events().map((e) => e.event);
      // The repeats came while the stop ran, and it ran to its end: the slow send handed back.
      expect(events.indexOf('daemon.stop.signal_repeated')).toBeLessThan(events.indexOf('daemon.stopped'));
      expect(events).toContain('daemon.exit');
      const after = new Database(dbFile, { readonly: true });
      try {
        expect(after.prepare('SELECT state, lease_owner FROM outbox').all()).toEqual([
          { state: 'queued', lease_owner: null },
        ]);
      } finally {
        after.close();
      }
    },
    CHILD_TEST_MS,
  );

  it(
    'mid-sync: the run ends interrupted with its checkpoint, and a later `vcu-sync sync` completes the mirror',
    async () => {
      const dir = workDir();
      const dbFile = path.join(dir, 'vcu.db');
      sim.faults.clear();
      sim.stats.reset();
      sim.faults.setRates({ latencyMs: 120 });
      const unitsPath = '/integration/v1/units';

      const toml = writeToml(dir, daemonToml({ onStartup: true, pageSize: 200 }));
      const run = spawnCli(['run'], daemonEnv(dir, sim.url, toml));
      await until(
        () => `five pages of units; output so far:\n${run.output().slice(-3000)}`,
        () => sim.stats.count(unitsPath) >= 5 || run.child.exitCode !== null,
        CHILD_WAIT_MS,
      );
      run.child.kill('SIGTERM');
      const code = await run.exited;
      sim.faults.clear();
      expect(code, run.output().slice(-3000)).toBe(0);
      expectWalCheckpointed(dbFile);

      let unitsBefore: number;
      let interruptedRun: number;
      {
        const db = new Database(dbFile, { readonly: true });
        const runs = db.prepare("SELECT id, status FROM sync_runs WHERE resource = 'units'").all() as Array<{
          id: number;
          status: string;
        }>;
        expect(runs).toHaveLength(1);
        expect(db.prepare("SELECT COUNT(*) AS n FROM sync_runs WHERE status = 'running'").get()).toEqual({
          n: 0,
        });
        unitsBefore = (db.prepare('SELECT COUNT(*) AS n FROM unit_operations').get() as { n: number }).n;
        const checkpoint = db
          .prepare("SELECT next_offset FROM sync_checkpoints WHERE resource = 'units'")
          .get() as { next_offset: number } | undefined;
        db.close();
        expect(runs[0]!.status).toBe('interrupted');
        interruptedRun = runs[0]!.id;
        // The pages already written are kept, with the checkpoint that matches them.
        expect(unitsBefore).toBeGreaterThan(0);
        expect(unitsBefore).toBeLessThan(UNITS);
        expect(checkpoint?.next_offset).toBe(unitsBefore);
      }

      const sync = spawnCli(['sync', 'units'], daemonEnv(dir, sim.url, toml));
      expect(await sync.exited, sync.output().slice(-3000)).toBe(0);
      const db = new Database(dbFile, { readonly: true });
      try {
        expect(db.prepare('SELECT COUNT(*) AS n FROM unit_operations').get()).toEqual({ n: UNITS });
        const last = db
          .prepare("SELECT status, resumed_from FROM sync_runs WHERE resource = 'units' ORDER BY id DESC")
          .get() as { status: string; resumed_from: number | null };
        // It went on from the interrupted run's checkpoint instead of starting over.
        expect(last).toEqual({ status: 'succeeded', resumed_from: interruptedRun });
      } finally {
        db.close();
      }
    },
    CHILD_TEST_MS,
  );
});

describe('dispatcher stop', () => {
  it('cancels requests still in flight after the grace period and releases their rows', async () => {
    const { log, lines } = capturingLogger();
    sim.faults.clear();
    const { ctx } = dispatchContext(sim, log);
    try {
      const short = createDispatcherComponent(ctx, { ...sqliteDispatcher(ctx), stopGraceMs: 50 });
      enqueueOperation(ctx, transfer('slow-1', { unitId: 91_001 }));
      enqueueOperation(ctx, transfer('slow-2', { unitId: 91_002 }));
      sim.faults.next(2, 'latency', { latencyMs: 8_000, pathPrefix: '/integration/v1/notify' });
      await short.start();
      await until('both rows claimed', () => rows(ctx).every((r) => r.state === 'sending'));
      await short.stop();
      const after = rows(ctx);
      expect(after.map((r) => [r.state, r.lease_owner, r.lease_until, r.attempts])).toEqual([
        ['queued', null, null, 0],
        ['queued', null, null, 0],
      ]);
      const released = lines
        .map((l) => JSON.parse(l) as { event?: string })
        .filter((l) => l.event === 'outbox.released');
      expect(released).toHaveLength(2);
    } finally {
      sim.faults.clear();
      ctx.operator().close();
      ctx.dispose();
    }
  });
});
