import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ChangeSignal } from '../../src/db/changeSignal.js';
import type { FeedQuery } from '../../src/feed/feedReads.js';
import { feedReads } from '../../src/feed/feedReads.js';
import { listenForChanges } from '../../src/postgres/changeListener.js';
import { appendChangesPg, openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { postgresScriptStore } from '../../src/postgres/scripts.js';

import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

const feedOf = (pool: pg.Pool) => feedReads(postgresScriptStore(pool), new ChangeSignal());
const feedHeadPg = (pool: pg.Pool) => feedOf(pool).head();
const readFeedPg = (pool: pg.Pool, q: FeedQuery) => feedOf(pool).read(q);

/** The feed on PostgreSQL: reads as SQLite serves them, and readers woken by LISTEN/NOTIFY. */
describe('the change feed on a real PostgreSQL server', () => {
  const cluster = inject('postgres');
  let database: TestDatabase;
  let replicaA: PgDatabase;
  let replicaB: PgDatabase;

  beforeAll(async () => {
    database = await createTestDatabase(cluster);
    replicaA = await openPostgres(database.url);
    replicaB = await openPostgres(database.url, { migrate: false });
  });
  afterAll(async () => {
    await replicaA?.close();
    await replicaB?.close();
    await database?.drop();
  });

  const write = (pool: PgDatabase, recordId: string, resource = 'operations') =>
    appendChangesPg(pool.pool, [{ resource, recordId, kind: 'queued', at: '2026-11-23T10:00:00.123Z' }]);

  it('reads entries after a seq, per resource, with numbers and ISO times as the API serves them', async () => {
    const before = await feedHeadPg(replicaA.pool);
    const first = await write(replicaA, 'op-1');
    await write(replicaA, 'p-1', 'projects');
    await write(replicaB, 'op-2');
    expect(await feedHeadPg(replicaB.pool)).toBe(first + 2);
    const all = await readFeedPg(replicaB.pool, { after: before, limit: 10 });
    expect(all).toEqual([
      {
        seq: first,
        resource: 'operations',
        recordId: 'op-1',
        record_id: 'op-1',
        kind: 'queued',
        at: '2026-11-23T10:00:00.123Z',
      },
      {
        seq: first + 1,
        resource: 'projects',
        recordId: 'p-1',
        record_id: 'p-1',
        kind: 'queued',
        at: '2026-11-23T10:00:00.123Z',
      },
      {
        seq: first + 2,
        resource: 'operations',
        recordId: 'op-2',
        record_id: 'op-2',
        kind: 'queued',
        at: '2026-11-23T10:00:00.123Z',
      },
    ]);
    const ops = await readFeedPg(replicaB.pool, { after: first, limit: 10, resource: 'operations' });
    expect(ops.map((e) => e.record_id)).toEqual(['op-2']);
    expect(await readFeedPg(replicaB.pool, { after: first, limit: 1 })).toHaveLength(1);
  });

  it('wakes a waiter on one replica when the other commits, and again after its connection is cut', async () => {
    const signal = new ChangeSignal();
    const errors: string[] = [];
    const listener = listenForChanges({
      pool: replicaA.pool,
      signal,
      onError: (err) => errors.push(err.message),
      reconnect: { baseMs: 1, capMs: 5 },
    });
    try {
      await listener.ready();
      const never = new AbortController();
      let waited = signal.whenChanged(signal.version, never.signal);
      const seq = await write(replicaB, 'op-wake');
      expect(await waited).toBe(true);
      expect(signal.version).toBeGreaterThan(0);

      // Cut the listening session from the server side; the listener reconnects and says so.
      const { rows } = await replicaB.pool.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`,
      );
      expect(rows).toHaveLength(1);
      const version = signal.version;
      waited = signal.whenChanged(version, never.signal);
      await replicaB.pool.query('SELECT pg_terminate_backend($1)', [rows[0]?.pid]);
      expect(await waited).toBe(true);
      await listener.ready();
      expect(errors.length).toBeGreaterThan(0);

      // And hears commits again on the new connection.
      waited = signal.whenChanged(signal.version, never.signal);
      const next = await write(replicaB, 'op-after-cut');
      expect(await waited).toBe(true);
      expect(next).toBe(seq + 1);
    } finally {
      await listener.stop();
    }
    // Stopped: its session said UNLISTEN (and went back to the pool), no session still listens.
    const { rows: left } = await replicaB.pool.query(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`,
    );
    expect(left).toEqual([]);
  });
});
