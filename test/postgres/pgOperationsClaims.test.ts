import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { holdLiveness } from '../../src/postgres/liveness.js';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { PgOperationsStore } from '../../src/postgres/operationsStore.js';
import { ROOT, tsNodeArgs } from '../helpers/cli.js';
import { createTestDatabase, type TestDatabase, terminateBackend } from '../helpers/postgres.js';
import { releaseDeadOutbox } from '../helpers/releaseDead.js';
import { at, keyedOps } from './claimFixtures.js';

/**
 * Several replicas on one PostgreSQL outbox: concurrent claimers never take one row twice nor two
 * rows of one order key out of order, and a dead replica's claims come back through the others'
 * `releaseDeadOutbox` (test/helpers/releaseDead.ts) long before their lease runs out (times are injected: the lease never expires here).
 */

/** A lease far beyond every `now` in these tests: only liveness can hand rows back. */
const LEASE_UNTIL = at(24 * 3600_000);

const replica = (owner: string) => ({ owner, name: 'vcu-sync', holds: 'outbox', now: at(0) });

const ops = (count: number, keys: number, prefix = 'op') => keyedOps(count, keys, prefix);

describe('PostgreSQL outbox shared by replicas', () => {
  const cluster = inject('postgres');
  let database: TestDatabase;
  let db: PgDatabase;

  beforeAll(async () => {
    database = await createTestDatabase(cluster);
    db = await openPostgres(database.url, { max: 20 });
  });
  afterAll(async () => {
    await db?.close();
    await database?.drop();
  });

  // Each claim form alone, and the daemon's: the form chosen per claim (operations/claim.ts).
  const FORMS = ['adaptive', 'walk', 'heads'] as const;

  it.each(FORMS)(
    '8 concurrent claimers settle 2,000 operations on 50 keys exactly once, in order per key (%s claims)',
    async (form) => {
      await db.pool.query(
        'TRUNCATE outbox, outbox_attempts, changes, deliveries, replicas RESTART IDENTITY CASCADE',
      );
      const seed = new PgOperationsStore(db.pool);
      const all = ops(2000, 50);
      for (let i = 0; i < all.length; i += 250) await seed.insert(all.slice(i, i + 250), at(0));

      const sentOrder: Array<{ id: number; key: string; seq: number }> = [];
      let seq = 0;
      // Keys with a row out for sending right now: two rows of one key must never be out at once.
      const inFlight = new Set<string>();
      const overlaps: string[] = [];
      const claimers = Array.from({ length: 8 }, (_, w) => {
        const owner = `replica-${w}`;
        const store = new PgOperationsStore(db.pool, { claimForm: form });
        return (async () => {
          let idle = 0;
          let settled = 0;
          // Bounded: each round claims or finds nothing; 8 claimers finish 2,000 rows well within it.
          for (let round = 0; round < 5000 && idle < 3; round++) {
            const now = at(1000 + round);
            const rows = await store.claim({ owner, now, leaseUntil: LEASE_UNTIL, limit: 10 });
            if (rows.length === 0) {
              idle += 1;
              continue;
            }
            idle = 0;
            for (const row of rows) {
              const key = row.order_key ?? '';
              if (inFlight.has(key)) overlaps.push(key);
              inFlight.add(key);
            }
            for (const row of rows) {
              sentOrder.push({ id: row.id, key: row.order_key ?? '', seq: seq++ });
              // Out of the set before the settle commits: after it, the key's next row may be claimed.
              inFlight.delete(row.order_key ?? '');
              const ok = await store.settle(
                { id: row.id, ref: row.marketplaceTransactionRef, owner, now },
                { startedAt: now, durationMs: 1, statusCode: 200, error: null },
                { to: 'accepted', response: '{}', status: 200 },
              );
              expect(ok).toBe(true);
              settled += 1;
            }
          }
          return settled;
        })();
      });
      const settled = await Promise.all(claimers);

      expect(overlaps).toEqual([]);
      expect(settled.reduce((a, b) => a + b, 0)).toBe(2000);
      // Exactly once: every id sent once, every row accepted after one attempt.
      expect(new Set(sentOrder.map((s) => s.id)).size).toBe(2000);
      const { rows: states } = await db.pool.query<{ state: string; attempts: number; n: string }>(
        'SELECT state, attempts, count(*) AS n FROM outbox GROUP BY state, attempts',
      );
      expect(states).toEqual([{ state: 'accepted', attempts: 1, n: '2000' }]);
      const { rows: attempts } = await db.pool.query<{ n: string }>(
        'SELECT count(*) AS n FROM outbox_attempts',
      );
      expect(attempts[0]?.n).toBe('2000');
      // In order per key: the sends of one key come in id order (a row is sent only once the older is settled).
      const byKey = new Map<string, number[]>();
      for (const s of sentOrder) byKey.set(s.key, [...(byKey.get(s.key) ?? []), s.id]);
      expect(byKey.size).toBe(50);
      for (const ids of byKey.values()) expect(ids).toEqual([...ids].sort((a, b) => a - b));
      // The feed: one queued and one accepted row per operation, nothing for the claims.
      const { rows: feed } = await db.pool.query<{ kind: string; n: string }>(
        "SELECT kind, count(*) AS n FROM changes WHERE resource = 'operations' GROUP BY kind ORDER BY kind",
      );
      expect(feed).toEqual([
        { kind: 'accepted', n: '2000' },
        { kind: 'queued', n: '2000' },
      ]);
    },
  );

  it.each(FORMS)(
    'rows enqueued while others claim are still sent in id order per key (%s claims)',
    async (form) => {
      await db.pool.query(
        'TRUNCATE outbox, outbox_attempts, changes, deliveries, replicas RESTART IDENTITY CASCADE',
      );
      const enqueuers = 4;
      const batches = 30;
      let enqueuing = enqueuers;
      const sent = new Map<string, number[]>();
      const enqueue = Array.from({ length: enqueuers }, async (_, e) => {
        const store = new PgOperationsStore(db.pool);
        for (let b = 0; b < batches; b++) {
          await store.insert(
            Array.from({ length: 5 }, (_, i) => ({
              ref: `e${e}-b${b}-${i}`,
              operationType: 'Transfer',
              orderKey: `key-${(b + i) % 3}`,
              body: '{}',
              hash: 'h',
            })),
            at(0),
          );
        }
        enqueuing -= 1;
      });
      const claim = Array.from({ length: 4 }, async (_, w) => {
        const owner = `claimer-${w}`;
        const store = new PgOperationsStore(db.pool, { claimForm: form });
        let idle = 0;
        for (let round = 0; round < 20_000 && (enqueuing > 0 || idle < 3); round++) {
          const now = at(1000 + round);
          const rows = await store.claim({ owner, now, leaseUntil: LEASE_UNTIL, limit: 5 });
          idle = rows.length === 0 ? idle + 1 : 0;
          for (const row of rows) {
            const key = row.order_key ?? '';
            sent.set(key, [...(sent.get(key) ?? []), row.id]);
            await store.settle(
              { id: row.id, ref: row.marketplaceTransactionRef, owner, now },
              { startedAt: now, durationMs: 1, statusCode: 200, error: null },
              { to: 'accepted', response: '{}', status: 200 },
            );
          }
        }
      });
      await Promise.all([...enqueue, ...claim]);
      const total = [...sent.values()].reduce((n, ids) => n + ids.length, 0);
      expect(total).toBe(enqueuers * batches * 5);
      for (const ids of sent.values()) expect(ids).toEqual([...ids].sort((a, b) => a - b));
    },
  );

  it('an enqueue of a key waits for an earlier enqueue of that key still in flight', async () => {
    await db.pool.query(
      'TRUNCATE outbox, outbox_attempts, changes, deliveries, replicas RESTART IDENTITY CASCADE',
    );
    const store = new PgOperationsStore(db.pool);
    // Another replica's enqueue of key K, holding the key's lock with its row not committed yet.
    const other = await db.pool.connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', ['K']);
      await other.query(
        `INSERT INTO outbox ("marketplaceTransactionRef", "operationType", order_key, body, body_hash, state,
           attempts, next_attempt_at, created_at, updated_at)
         VALUES ('first', 'Transfer', 'K', '{}', 'h', 'queued', 0, $1, $1, $1)`,
        [at(0)],
      );
      let done = false;
      const second = store
        .insert([{ ref: 'second', operationType: 'Transfer', orderKey: 'K', body: '{}', hash: 'h' }], at(0))
        .then((rows) => {
          done = true;
          return rows;
        });
      // Wait until the second enqueue is queued behind the lock (a condition, not a time).
      for (let i = 0; i < 10_000; i++) {
        const { rowCount } = await db.pool.query(
          `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
             AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
        );
        if (rowCount) break;
      }
      expect(done).toBe(false);
      await other.query('COMMIT');
      const [row] = await second;
      expect(row?.id).toBeGreaterThan(1);
      const claimed = await store.claim({
        owner: 'replica-x',
        now: at(1),
        leaseUntil: LEASE_UNTIL,
        limit: 10,
      });
      expect(claimed.map((r) => r.marketplaceTransactionRef)).toEqual(['first']);
    } finally {
      other.release();
    }
  });

  it('a replica whose liveness session is terminated has its claims handed back by another at once', async () => {
    await db.pool.query(
      'TRUNCATE outbox, outbox_attempts, changes, deliveries, replicas RESTART IDENTITY CASCADE',
    );
    const a = new PgOperationsStore(db.pool);
    const b = new PgOperationsStore(db.pool);
    const liveA = await holdLiveness(db.pool, replica('replica-a'));
    const liveB = await holdLiveness(db.pool, replica('replica-b'));
    try {
      await liveA.heartbeat(at(5));
      const replicas = async () =>
        (
          await db.pool.query<{ lease_owner: string; beat: string }>(
            `SELECT lease_owner, to_char(last_heartbeat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS beat
             FROM replicas ORDER BY lease_owner`,
          )
        ).rows;
      expect(await replicas()).toEqual([
        { lease_owner: 'replica-a', beat: at(5) },
        { lease_owner: 'replica-b', beat: at(0) },
      ]);
      await a.insert(ops(6, 3, 'live'), at(0));
      const claimed = await a.claim({ owner: 'replica-a', now: at(10), leaseUntil: LEASE_UNTIL, limit: 10 });
      expect(claimed.map((r) => r.id)).toEqual([1, 2, 3]);

      // A alive: B leaves its claims alone, and cannot claim the next rows of A's keys.
      expect(await releaseDeadOutbox(db.pool, b, 'replica-b', at(20))).toEqual([]);
      expect(await b.claim({ owner: 'replica-b', now: at(20), leaseUntil: LEASE_UNTIL, limit: 10 })).toEqual(
        [],
      );

      // A's connection dies (as when its process is SIGKILLed): its lock goes with it.
      await terminateBackend(cluster, liveA.pid);
      const released = await releaseDeadOutbox(db.pool, b, 'replica-b', at(30));
      expect(released.map((r) => r.id)).toEqual([1, 2, 3]);
      // The dead replica's row goes with it; the live one stays.
      expect((await replicas()).map((r) => r.lease_owner)).toEqual(['replica-b']);
      await expect(liveA.heartbeat(at(35))).rejects.toThrow();

      // Back in the queue, attempt not counted, and B sends them first, in order per key.
      const { rows } = await db.pool.query<{ state: string; attempts: number; lease_owner: string | null }>(
        'SELECT state, attempts, lease_owner FROM outbox WHERE id <= 3 ORDER BY id',
      );
      expect(rows).toEqual(Array(3).fill({ state: 'queued', attempts: 0, lease_owner: null }));
      const retaken = await b.claim({ owner: 'replica-b', now: at(40), leaseUntil: LEASE_UNTIL, limit: 10 });
      expect(retaken.map((r) => r.id)).toEqual([1, 2, 3]);
      // B's own claims are never its own dead owner.
      expect(await releaseDeadOutbox(db.pool, b, 'replica-b', at(50))).toEqual([]);
      // A stale settle from the dead A is refused: B holds the rows now.
      const stale = await a.settle(
        { id: 1, ref: 'live-0', owner: 'replica-a', now: at(60) },
        { startedAt: at(60), durationMs: 1, statusCode: 200, error: null },
        { to: 'accepted', response: '{}', status: 200 },
      );
      expect(stale).toBe(false);
    } finally {
      await liveA.close().catch(() => {});
      await liveB.close();
    }
  });

  it('a replica process killed with SIGKILL while holding claims has them handed back at once', async () => {
    await db.pool.query(
      'TRUNCATE outbox, outbox_attempts, changes, deliveries, replicas RESTART IDENTITY CASCADE',
    );
    const b = new PgOperationsStore(db.pool);
    const liveB = await holdLiveness(db.pool, replica('replica-b'));
    try {
      await b.insert(ops(4, 2, 'kill'), at(0));
      const child = spawn(
        process.execPath,
        tsNodeArgs('test/postgres/replicaChild.ts', [database.url, 'replica-child', at(10), LEASE_UNTIL]),
        { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
      );
      const exited = new Promise((resolve) => child.once('exit', resolve));
      const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
      const said = JSON.parse(line) as { claimed: number[]; pid: number };
      expect(said.claimed).toEqual([1, 2]);
      expect(await releaseDeadOutbox(db.pool, b, 'replica-b', at(20))).toEqual([]);

      child.kill('SIGKILL');
      await exited;
      // The server notices the dead client when its socket closes: wait for its backend to go (a condition).
      for (let i = 0; i < 10_000; i++) {
        const { rowCount } = await db.pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [said.pid]);
        if (!rowCount) break;
      }
      const released = await releaseDeadOutbox(db.pool, b, 'replica-b', at(30));
      expect(released.map((r) => r.id)).toEqual([1, 2]);
      const retaken = await b.claim({ owner: 'replica-b', now: at(40), leaseUntil: LEASE_UNTIL, limit: 10 });
      expect(retaken.map((r) => [r.id, r.attempts])).toEqual([
        [1, 1],
        [2, 1],
      ]);
    } finally {
      await liveB.close();
    }
  });

  it('two replicas cannot hold the same lease owner', async () => {
    const first = await holdLiveness(db.pool, replica('replica-same'));
    try {
      await expect(holdLiveness(db.pool, replica('replica-same'))).rejects.toThrow(/another live replica/);
    } finally {
      await first.close();
    }
  });
});
