import { afterEach, describe, expect, inject, it } from 'vitest';
import { isoAt, ManualClock } from '../../src/common/clock.js';
import { PgAvailability } from '../../src/postgres/availability.js';
import { holdLiveness } from '../../src/postgres/liveness.js';
import { PgOperationsStore } from '../../src/postgres/operationsStore.js';
import {
  HEARTBEAT_MS,
  RETAKE_BACKOFF,
  type ReplicaPresence,
  replicaPresence,
  SWEEP_MS,
} from '../../src/postgres/presence.js';
import { ManualTimers } from '../helpers/manualTimers.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { terminateBackend } from '../helpers/postgres.js';
import { releaseDeadOutbox } from '../helpers/releaseDead.js';
import { capturingLogger } from '../outbox/fixtures.js';

/**
 * A replica's presence on the real cluster: its liveness lock, heartbeat and sweep, on a manual
 * clock and manual timers (a period passes when the test advances it, never in real time).
 */

const T0 = Date.parse('2026-04-01T00:00:00.000Z');
/** A lease far beyond every time here: only liveness can hand rows back. */
const LEASE_UNTIL = isoAt(T0 + 24 * 3600_000);

const cluster = inject('postgres');
const pg = useTestPgDatabase();

interface TestReplica {
  owner: string;
  presence: ReplicaPresence;
  timers: ManualTimers;
  store: PgOperationsStore;
  /** What each hand-back's call carried. */
  released: number[];
  /** The time each settleOrphans call was given. */
  orphanSweeps: string[];
  lines: string[];
}

const started: TestReplica[] = [];

/**
 * The daemon's callback, with the deliveries released by plain SQL (DeliveriesStore.releaseOwner
 * does it in the daemon): the outbox rows and the deliveries the dead owner holds.
 */
async function releaseOwner(store: PgOperationsStore, owner: string, nowIso: string): Promise<number> {
  const rows = await store.releaseOwner(owner, nowIso);
  const deliveries = await pg.db.pool.query(
    `UPDATE deliveries SET state = 'pending', lease_owner = NULL, lease_until = NULL, updated_at = $2
     WHERE state = 'sending' AND lease_owner = $1`,
    [owner, nowIso],
  );
  return rows.length + (deliveries.rowCount ?? 0);
}

async function startReplica(owner: string, availability?: PgAvailability): Promise<TestReplica> {
  const clock = new ManualClock(T0);
  const timers = new ManualTimers(clock);
  const store = new PgOperationsStore(pg.db.pool);
  const { log, lines } = capturingLogger();
  const released: number[] = [];
  const orphanSweeps: string[] = [];
  const presence = replicaPresence({
    pool: pg.db.pool,
    replica: { owner, name: 'vcu-sync', holds: 'outbox', now: isoAt(T0) },
    log,
    releaseOwner: (dead, nowIso) => releaseOwner(store, dead, nowIso),
    settleOrphans: async (nowIso) => {
      orphanSweeps.push(nowIso);
      return 0;
    },
    clock,
    timers,
    random: () => 0,
    availability,
  });
  presence.onHandBack((count) => released.push(count));
  await presence.start();
  const replica = { owner, presence, timers, store, released, orphanSweeps, lines };
  started.push(replica);
  return replica;
}

afterEach(async () => {
  for (const r of started.splice(0)) await r.presence.stop();
  await pg.db.pool.query(
    'TRUNCATE outbox, outbox_attempts, changes, deliveries, replicas RESTART IDENTITY CASCADE',
  );
});

async function queue(store: PgOperationsStore, count: number): Promise<void> {
  await store.insert(
    Array.from({ length: count }, (_, i) => ({
      ref: `op-${i}`,
      operationType: 'Transfer',
      orderKey: null,
      body: '{}',
      hash: `h${i}`,
    })),
    isoAt(T0),
  );
}

const claim = (r: TestReplica, limit: number) =>
  r.store.claim({ owner: r.owner, now: isoAt(T0 + 1), leaseUntil: LEASE_UNTIL, limit });

async function claimDelivery(owner: string, ref: string): Promise<void> {
  await pg.db.pool.query(
    `INSERT INTO deliveries (subscriber, event_type, ref, webhook_id, body, state, attempts, next_attempt_at,
                             lease_owner, lease_until, created_at, updated_at)
     VALUES ('app', 'operation.accepted', $2, $2 || '-d', '{}', 'sending', 1, $3, $1, $4, $3, $3)`,
    [owner, ref, isoAt(T0), LEASE_UNTIL],
  );
}

const outbox = async () =>
  (
    await pg.db.pool.query<{ id: number; state: string; owner: string | null }>(
      'SELECT id::float8 AS id, state, lease_owner AS owner FROM outbox ORDER BY id',
    )
  ).rows;
const deliveries = async () =>
  (
    await pg.db.pool.query<{ ref: string; state: string; owner: string | null }>(
      'SELECT ref, state, lease_owner AS owner FROM deliveries ORDER BY id',
    )
  ).rows;
const replicas = async () =>
  (
    await pg.db.pool.query<{ owner: string; beat: string }>(
      `SELECT lease_owner AS owner, to_char(last_heartbeat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS beat
       FROM replicas ORDER BY lease_owner`,
    )
  ).rows;

/** The liveness session's end reaches the client as an event: wait for it (a condition, not a time). */
async function untilLost(r: TestReplica): Promise<void> {
  for (let i = 0; i < 2_000 && r.presence.alive(); i++)
    await new Promise((resolve) => setTimeout(resolve, 5));
  expect(r.presence.alive()).toBe(false);
}

describe('replica presence on PostgreSQL', () => {
  it("hands back a terminated replica's outbox claims and deliveries within one sweep, a live one's never", async () => {
    const a = await startReplica('replica-a');
    const b = await startReplica('replica-b');
    const c = await startReplica('replica-c');
    await queue(a.store, 6);
    expect((await claim(a, 2)).map((r) => r.id)).toEqual([1, 2]);
    expect((await claim(c, 2)).map((r) => r.id)).toEqual([3, 4]);
    await claimDelivery('replica-a', 'op-0');
    await claimDelivery('replica-c', 'op-2');

    // Everyone alive: a sweep hands nothing back.
    await b.timers.advance(SWEEP_MS);
    expect(b.released).toEqual([]);

    await terminateBackend(cluster, c.presence.pid() as number);
    // One sweep period later, B has handed C's claims back, and only C's.
    await b.timers.advance(SWEEP_MS);
    expect(b.released).toEqual([3]);
    expect(await outbox()).toEqual([
      { id: 1, state: 'sending', owner: 'replica-a' },
      { id: 2, state: 'sending', owner: 'replica-a' },
      { id: 3, state: 'queued', owner: null },
      { id: 4, state: 'queued', owner: null },
      { id: 5, state: 'queued', owner: null },
      { id: 6, state: 'queued', owner: null },
    ]);
    expect(await deliveries()).toEqual([
      { ref: 'op-0', state: 'sending', owner: 'replica-a' },
      { ref: 'op-2', state: 'pending', owner: null },
    ]);
    expect((await replicas()).map((r) => r.owner)).toEqual(['replica-a', 'replica-b']);
    expect(b.lines.join('')).toContain('"event":"replica.released"');
    // The next sweep finds nothing more.
    await b.timers.advance(SWEEP_MS);
    expect(b.released).toEqual([3]);
  });

  it("finds a dead owner's deliveries after the outbox-only release at start-up dropped its replicas row", async () => {
    const b = await startReplica('replica-b');
    const c = await startReplica('replica-c');
    await queue(b.store, 2);
    await claim(c, 1);
    await claimDelivery('replica-c', 'op-0');
    await terminateBackend(cluster, c.presence.pid() as number);
    // The outbox rows alone handed back, and the dead replica's row dropped with them.
    expect(
      (await releaseDeadOutbox(pg.db.pool, b.store, 'replica-b', isoAt(T0 + 10))).map((r) => r.id),
    ).toEqual([1]);
    expect((await replicas()).map((r) => r.owner)).toEqual(['replica-b']);
    await b.timers.advance(SWEEP_MS);
    expect(b.released).toEqual([1]);
    expect(await deliveries()).toEqual([{ ref: 'op-0', state: 'pending', owner: null }]);
  });

  it("settles dead replicas' orphans (their sync runs) at start and after every sweep, at the sweep's time", async () => {
    const e = await startReplica('replica-e');
    expect(e.orphanSweeps).toEqual([isoAt(T0)]);
    await e.timers.advance(SWEEP_MS);
    expect(e.orphanSweeps).toEqual([isoAt(T0), isoAt(T0 + SWEEP_MS)]);
  });

  it('heartbeats on its period, by the injected clock', async () => {
    const d = await startReplica('replica-d');
    expect(await replicas()).toEqual([{ owner: 'replica-d', beat: isoAt(T0) }]);
    await d.timers.advance(HEARTBEAT_MS - 1);
    expect(await replicas()).toEqual([{ owner: 'replica-d', beat: isoAt(T0) }]);
    await d.timers.advance(1);
    expect(await replicas()).toEqual([{ owner: 'replica-d', beat: isoAt(T0 + HEARTBEAT_MS) }]);
    await d.timers.advance(HEARTBEAT_MS);
    expect(await replicas()).toEqual([{ owner: 'replica-d', beat: isoAt(T0 + 2 * HEARTBEAT_MS) }]);
  });

  it('re-takes its lock after its connection is cut, and is alive again', async () => {
    const a = await startReplica('replica-a');
    const c = await startReplica('replica-c');
    const pid = c.presence.pid() as number;
    await terminateBackend(cluster, pid);
    await untilLost(c);
    expect(c.presence.pid()).toBeNull();
    expect(c.lines.join('')).toContain('"event":"replica.liveness.lost"');
    // Presumed dead meanwhile: A's sweep drops its replicas row.
    await a.timers.advance(SWEEP_MS);
    expect((await replicas()).map((r) => r.owner)).toEqual(['replica-a']);

    // The first re-take waits its backoff (half the base with this jitter), then holds the lock again.
    await c.timers.advance(RETAKE_BACKOFF.baseMs / 2 - 1);
    expect(c.presence.alive()).toBe(false);
    await c.timers.advance(1);
    expect(c.presence.alive()).toBe(true);
    expect(c.presence.pid()).not.toBe(pid);
    expect(c.lines.join('')).toContain('"event":"replica.liveness.retaken"');
    // Its row is back, its heartbeat stamped at the re-take (not its start).
    expect(await replicas()).toEqual([
      { owner: 'replica-a', beat: isoAt(T0) },
      { owner: 'replica-c', beat: isoAt(T0 + RETAKE_BACKOFF.baseMs / 2) },
    ]);
    // Alive to the others again: its new claims stay its own through their sweeps.
    await queue(a.store, 1);
    await claim(c, 1);
    await a.timers.advance(SWEEP_MS);
    expect(await outbox()).toEqual([{ id: 1, state: 'sending', owner: 'replica-c' }]);
    // And it heartbeats through the new session, on its period.
    await c.timers.advance(HEARTBEAT_MS);
    expect((await replicas()).find((r) => r.owner === 'replica-c')?.beat).toBe(isoAt(T0 + HEARTBEAT_MS));
  });

  it('re-takes its lock as soon as the database is back, not at the end of its backoff', async () => {
    const availability = new PgAvailability(new ManualClock(T0));
    const g = await startReplica('replica-g', availability);
    const pid = g.presence.pid() as number;
    await terminateBackend(cluster, pid);
    await untilLost(g);
    // The database away a while (attempts refused): the re-take waits on its backoff meanwhile.
    availability.noteConnectFailed(
      Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }),
    );
    await g.timers.advance(0);
    expect(g.presence.alive()).toBe(false);
    // Back (a pooled connection opened): the re-take goes now, with no backoff time passing.
    availability.noteConnected();
    await g.timers.advance(0);
    expect(g.presence.alive()).toBe(true);
    expect(g.presence.pid()).not.toBe(pid);
    expect(g.lines.join('')).toContain('"event":"replica.liveness.retaken"');
    // One re-take waiting at most: the backoff's own timer was cancelled, not left to fire again.
    await g.timers.advance(RETAKE_BACKOFF.capMs);
    expect(g.lines.filter((l) => l.includes('"event":"replica.liveness.retaken"'))).toHaveLength(1);
  });

  it('stop() drops its lock and its replicas row, and leaves no timer set', async () => {
    const e = await startReplica('replica-e');
    const f = await startReplica('replica-f');
    await e.presence.stop();
    expect(e.presence.alive()).toBe(false);
    expect(e.timers.size).toBe(0);
    expect((await replicas()).map((r) => r.owner)).toEqual(['replica-f']);
    // The lock is free: the same owner can be held again at once.
    const again = await holdLiveness(pg.db.pool, {
      owner: 'replica-e',
      name: 'vcu-sync',
      holds: 'outbox',
      now: isoAt(T0),
    });
    await again.close();
    // A replica stopped while its session was lost removes its row all the same.
    await terminateBackend(cluster, f.presence.pid() as number);
    await untilLost(f);
    await f.presence.stop();
    expect(f.timers.size).toBe(0);
    expect(await replicas()).toEqual([]);
  });
});
