import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { formatHealth } from '../../src/health/format.js';
import { readHealth } from '../../src/health/readHealth.js';
import { judge, REPLICA_STALE_MS, type RuleInputs } from '../../src/health/rules.js';
import {
  type HealthSnapshot,
  NO_FAULTS,
  type ReplicaFacts,
  type RunningSync,
  unreadableSnapshot,
} from '../../src/health/snapshot.js';

/**
 * The replica rule as a table: which replicas and runs are a `replica-dead` problem, and which are
 * not (a dead replica that held nothing, a heartbeat exactly at the limit, a run whose lock is held).
 */

const NOW = Date.parse('2026-03-02T12:00:00.000Z');
const ago = (ms: number) => new Date(NOW - ms).toISOString();
const INPUTS: RuleInputs = {
  now: NOW,
  periods: {},
  stalePeriods: 3,
  decisionWarnHours: 24,
  decisionWarnCount: 100,
};

const replica = (over: Partial<ReplicaFacts>): ReplicaFacts => ({
  owner: 'host-a:1',
  name: 'mkt-a',
  runs: 'outbox',
  startedAt: ago(3_600_000),
  lastHeartbeatAt: ago(10_000),
  alive: true,
  claimed: 0,
  claimedDeliveries: 0,
  oldestClaimAt: null,
  ...over,
});
const run = (over: Partial<RunningSync>): RunningSync => ({
  id: 7,
  resource: 'units',
  startedAt: ago(60_000),
  pid: 12,
  lockHeld: true,
  ...over,
});

function snapshotWith(replicas: ReplicaFacts[], runningSyncs: RunningSync[] = []): HealthSnapshot {
  // The empty snapshot minus its read error: only the replicas can raise anything.
  return { ...unreadableSnapshot({ ...NO_FAULTS }), replicas, runningSyncs };
}

const CASES: Array<{ name: string; snapshot: HealthSnapshot; messages: string[] }> = [
  {
    name: 'two live replicas beating',
    snapshot: snapshotWith([replica({}), replica({ owner: 'b' })]),
    messages: [],
  },
  {
    name: 'a dead replica that held nothing (its row waits for releaseDead)',
    snapshot: snapshotWith([replica({ alive: false })]),
    messages: [],
  },
  {
    name: 'a dead replica holding claims',
    snapshot: snapshotWith([replica({ alive: false, claimed: 3, oldestClaimAt: ago(30_000) })]),
    messages: [
      'replica mkt-a (host-a:1) is gone (its liveness lock is free), holding 3 claimed operations; last heartbeat 10s ago',
    ],
  },
  {
    name: 'a dead replica holding only subscriber deliveries',
    snapshot: snapshotWith([replica({ alive: false, claimedDeliveries: 1 })]),
    messages: [
      'replica mkt-a (host-a:1) is gone (its liveness lock is free), holding 1 claimed delivery; last heartbeat 10s ago',
    ],
  },
  {
    name: 'a dead replica holding both',
    snapshot: snapshotWith([replica({ alive: false, claimed: 1, claimedDeliveries: 2 })]),
    messages: [
      'replica mkt-a (host-a:1) is gone (its liveness lock is free), holding 1 claimed operation and 2 claimed deliveries; last heartbeat 10s ago',
    ],
  },
  {
    name: 'a heartbeat exactly at the limit is not stale yet',
    snapshot: snapshotWith([replica({ lastHeartbeatAt: ago(REPLICA_STALE_MS) })]),
    messages: [],
  },
  {
    name: 'a live replica whose heartbeat stopped (hung)',
    snapshot: snapshotWith([replica({ lastHeartbeatAt: ago(REPLICA_STALE_MS + 1000), claimed: 1 })]),
    messages: [
      'replica mkt-a (host-a:1) has not sent a heartbeat for 2m though its session holds its lock, holding 1 claimed operation',
    ],
  },
  {
    name: 'a running sync whose run lock is held, and one whose lock is free',
    snapshot: snapshotWith([], [run({}), run({ id: 8, resource: 'projects', lockHeld: false })]),
    messages: [
      'projects sync run 8 is marked running but no replica holds its run lock: the replica running it is gone',
    ],
  },
];

describe('replica-dead', () => {
  it.each(CASES)('$name', ({ snapshot, messages }) => {
    const { status, problems } = judge(snapshot, INPUTS);
    expect(problems.map((p) => p.message)).toEqual(messages);
    expect(problems.every((p) => p.code === 'replica-dead' && p.severity === 'warning')).toBe(true);
    expect(status).toBe(messages.length ? 'warning' : 'ok');
  });

  it("the text status lists PostgreSQL's replicas and running syncs, and nothing of them on SQLite", async () => {
    const config = loadConfig({ env: { VCU_SYNC_DB: '/nonexistent/unused.db' } });
    const health = async (snapshot: HealthSnapshot) =>
      readHealth(
        {
          store: { kind: 'postgres', location: 'db.example:5432/vcu' },
          snapshot: async () => snapshot,
          daemonStartedAt: async () => null,
          readFailed: () => ({ ...NO_FAULTS }),
          series: () => Promise.reject(new Error('not read by status')),
        },
        config,
        NOW,
      );
    const onPostgres = formatHealth(
      await health(snapshotWith([replica({ alive: false, claimed: 2 })], [run({ lockHeld: false })])),
      NOW,
    );
    expect(onPostgres).toContain(
      '\nreplicas: 1\n  mkt-a (host-a:1) DEAD, heartbeat 10s ago, runs outbox, 2 claimed, started 60m ago\n',
    );
    expect(onPostgres).toContain(
      `  sync units #7 running since ${ago(60_000)} (run lock FREE: its replica is gone)\n`,
    );
    const { replicas: _r, runningSyncs: _s, ...sqliteShape } = snapshotWith([]);
    expect(formatHealth(await health(sqliteShape), NOW)).not.toContain('replicas');
  });
});
