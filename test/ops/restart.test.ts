import { existsSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteContext } from '../../src/app/sqliteStores.js';
import { silentLogger } from '../../src/common/log.js';
import { loadConfig } from '../../src/config/config.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { lockPathFor } from '../../src/sqlite/ownership.js';
import { tempDir } from '../helpers/context.js';
import { assertNoPersonalData, enqueueOperation, transfer } from '../outbox/fixtures.js';
import { daemonEnv, daemonToml, spawnCli, until, untilEvent, writeToml } from './child.js';

const TOTAL = 1_000;
const UNITS = 5;
const CONCURRENCY = 4;
const NOTIFY = '/integration/v1/notify';

let sim: Simulator;
let cleanup: () => void;
let dir: string;

beforeAll(async () => {
  sim = await startSimulator({ webhook: { policy: 'none' } });
  ({ dir, cleanup } = tempDir('vcu-sync-restart-'));
});
afterAll(async () => {
  await sim.close();
  cleanup();
});

interface Stored {
  ref: string;
  state: string;
  attempts: number;
  lease_owner: string | null;
  lease_until: string | null;
  accepted_at: string | null;
}

describe('vcu-sync run: SIGKILL mid-drain and mid-sync, then restart', () => {
  it(`hands the dead daemon's claims back at start-up: ${TOTAL} operations on ${UNITS} units all delivered while its ${600} s leases still stand`, async () => {
    const dbFile = path.join(dir, 'vcu.db');
    const refs = Array.from({ length: TOTAL }, (_, i) => `restart-${i}`);
    const unitOf = (i: number) => 96_000 + (i % UNITS);
    {
      const config = loadConfig({
        env: { VCU_SYNC_DB: dbFile },
        overrides: { 'operator.marketplace_id': 'mkt-ops' },
      });
      const seed = openSqliteContext(config, silentLogger);
      for (const [i, ref] of refs.entries())
        expect(enqueueOperation(seed, transfer(ref, { unitId: unitOf(i) })).status).toBe(201);
      seed.database.close();
    }
    // Leases far longer than the test: only the start-up hand-back can free the dead daemon's rows.
    const toml = writeToml(dir, daemonToml({ onStartup: true, extra: 'lease_seconds = 600' }));
    const env = daemonEnv(dir, sim.url, toml);
    const reader = new Database(dbFile, { readonly: true });
    const all = () =>
      reader
        .prepare(
          `SELECT marketplaceTransactionRef AS ref, state, attempts, lease_owner, lease_until, accepted_at
           FROM outbox ORDER BY id`,
        )
        .all() as Stored[];
    const count = (state: string) =>
      (reader.prepare('SELECT COUNT(*) AS n FROM outbox WHERE state = ?').get(state) as { n: number }).n;
    /** Rows claimed whose request the operator has received: sent and not settled. */
    const inFlight = () => {
      const sent = new Set(sim.notifications.map((n) => n.ref));
      return all().filter((r) => r.state === 'sending' && sent.has(r.ref));
    };
    const runsOf = (status: string) =>
      reader.prepare('SELECT id FROM sync_runs WHERE status = ? ORDER BY id').pluck().all(status) as number[];
    try {
      // The start-up sync of projects hangs on its first page: the kill finds that run `running`.
      sim.faults.next(1, 'latency', { latencyMs: 20_000, pathPrefix: '/integration/v1/projects' });
      const first = spawnCli(['run'], env);
      await untilEvent(first, 'daemon.ready');
      await until('a third of the queue accepted', () => count('accepted') >= TOTAL / 3, 120_000);
      // The next requests hang: every dispatch slot holds a claimed row when the kill lands.
      sim.faults.next(CONCURRENCY, 'latency', { latencyMs: 20_000, pathPrefix: NOTIFY });
      await until('every slot hung on the operator', () => sim.faults.pending().length === 0, 60_000);
      await until('the projects run started', () => runsOf('running').length > 0);
      // The rows answered before the slots hung are settled (a busy dispatcher's settles commit a
      // few ms later: sqlite/dispatcherBatches.ts): only the hung requests are unsettled and sent.
      await until('only the hung requests in flight', () => inFlight().length === CONCURRENCY);
      first.child.kill('SIGKILL');
      expect(await first.exited).toBeNull();

      // Claimed at the kill: every slot's request, hung at the operator, and any row held ahead for
      // the next free slot (the daemon claims ahead: outbox/claimAhead.ts), never sent. At most one
      // per unit: a unit's next row is not claimable while its older one is unsettled.
      const atKill = all().filter((r) => r.state === 'sending');
      const hung = inFlight();
      expect(hung).toHaveLength(CONCURRENCY);
      expect(atKill.length).toBeLessThanOrEqual(UNITS);
      const leaseEnds = new Map(atKill.map((r) => [r.ref, Date.parse(r.lease_until!)]));
      for (const end of leaseEnds.values()) expect(end - Date.now()).toBeGreaterThan(500_000);
      const acceptedAtKill = count('accepted');
      expect(acceptedAtKill).toBeLessThan(TOTAL - CONCURRENCY);
      // The SIGKILLed daemon's lock file is still there; it must not block the restart.
      expect(existsSync(lockPathFor(dbFile))).toBe(true);
      const runningAtKill = runsOf('running');
      expect(runningAtKill.length).toBeGreaterThan(0);

      const second = spawnCli(['run'], env);
      await untilEvent(second, 'daemon.ready');
      const handedBack = second.events().find((e) => e.event === 'outbox.released_at_start');
      expect(handedBack?.rows).toBe(atKill.length);
      expect([...((handedBack?.refs ?? []) as string[])].sort()).toEqual(atKill.map((r) => r.ref).sort());
      await until(
        () => `all ${TOTAL} accepted (now ${count('accepted')}); output:\n${second.output().slice(-2000)}`,
        () => count('accepted') === TOTAL,
        120_000,
      );
      // The dead daemon's sync run is marked interrupted, and the new daemon's own runs complete.
      await until('start-up syncs finished', () => runsOf('running').length === 0);
      expect(runsOf('interrupted')).toEqual(runningAtKill);
      expect(runsOf('failed')).toEqual([]);
      second.child.kill('SIGTERM');
      expect(await second.exited, second.output().slice(-3000)).toBe(0);
      assertNoPersonalData([first.output(), second.output()]);

      const end = all();
      expect(end.map((r) => r.ref)).toEqual(refs);
      expect(end.filter((r) => r.state !== 'accepted' || r.lease_owner !== null)).toEqual([]);
      for (const r of end.filter((row) => leaseEnds.has(row.ref))) {
        // Delivered long before the dead daemon's lease would have let anyone touch it, and the
        // attempt the kill cut short is not counted.
        expect(Date.parse(r.accepted_at!)).toBeLessThan(leaseEnds.get(r.ref)!);
        expect(r.attempts).toBe(1);
      }

      // Nothing lost; sent twice only the rows in flight at the kill (not those held ahead); per-unit order kept.
      const received = new Map<string, number>();
      for (const n of sim.notifications) if (n.ref) received.set(n.ref, (received.get(n.ref) ?? 0) + 1);
      for (const ref of refs) expect(received.get(ref) ?? 0, ref).toBeGreaterThanOrEqual(1);
      const twice = [...received].filter(([, n]) => n > 1).map(([ref]) => ref);
      expect(twice.sort()).toEqual(hung.map((r) => r.ref).sort());
      const index = new Map(refs.map((ref, i) => [ref, i]));
      const firstSeen: number[][] = Array.from({ length: UNITS }, () => []);
      const seen = new Set<string>();
      for (const n of sim.notifications) {
        if (!n.ref || seen.has(n.ref)) continue;
        seen.add(n.ref);
        const i = index.get(n.ref)!;
        firstSeen[i % UNITS]!.push(i);
      }
      for (const order of firstSeen) expect(order).toEqual([...order].sort((a, b) => a - b));
    } finally {
      reader.close();
    }
  }, 600_000); // a safety net for two child daemons and 1,000 operations, not a speed target
});
