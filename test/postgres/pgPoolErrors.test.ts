import { describe, expect, inject, it } from 'vitest';
import { inPgTransaction, openPostgres } from '../../src/postgres/open.js';
import { freePort } from '../helpers/net.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { terminateBackend } from '../helpers/postgres.js';
import { until } from '../ops/child.js';

/**
 * The root cause of issue 25: pg-pool listens for a client's `error` only while the client sits
 * idle, so a backend ended while its client is checked out (between two statements of a
 * transaction) emitted an `error` nobody handled, and the process ended. Every pooled client now
 * has a listener for life (src/postgres/pool.ts); the broken one is dropped, the next query opens a new
 * one. An unhandled `error` here would fail the run (vitest reports it), not just this test.
 */

const cluster = inject('postgres');
const pgTest = useTestPgDatabase();

describe('pooled connections that break', () => {
  it('a backend ended in the middle of a transaction: the transaction fails, nothing is unhandled, the pool goes on', async () => {
    const lost: string[] = [];
    const db = await openPostgres(pgTest.database.url, {
      migrate: false,
      max: 2,
      onConnectionLost: (err) => lost.push(err.message),
    });
    try {
      const failed = await inPgTransaction(db.pool, async (client) => {
        const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        await terminateBackend(cluster, rows[0]!.pid);
        // Its error event arrives while the client is still checked out (pg-pool has no listener then).
        await until('the checked-out connection reported lost', () => lost.length > 0);
        await client.query('SELECT 1');
      }).then(
        () => 'committed',
        (err: Error) => err.message,
      );
      expect(failed).not.toBe('committed');
      // Told once for that connection, not once per error event pg emits for it.
      expect(lost).toHaveLength(1);
      expect(lost[0]).toMatch(/terminating connection|Connection terminated/);
      // The broken client was destroyed, not pooled: the next transaction works on a new one.
      expect(db.pool.totalCount).toBe(0);
      const answer = await inPgTransaction(db.pool, (client) =>
        client.query<{ one: number }>('SELECT 1 AS one'),
      );
      expect(answer.rows).toEqual([{ one: 1 }]);
      expect(db.availability.reachable()).toBe(true);
    } finally {
      await db.close();
    }
  });

  it('an idle pooled connection ended is reported and replaced', async () => {
    const lost: string[] = [];
    const db = await openPostgres(pgTest.database.url, {
      migrate: false,
      max: 1,
      onConnectionLost: (err) => lost.push(err.message),
    });
    try {
      const { rows } = await db.pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await terminateBackend(cluster, rows[0]!.pid);
      await until('the idle connection reported lost', () => lost.length === 1);
      const again = await db.pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      expect(again.rows[0]!.pid).not.toBe(rows[0]!.pid);
      expect(lost).toHaveLength(1);
    } finally {
      await db.close();
    }
  });

  it('a server that is not there: unreachable from the first refusal, reachable at the next answer', async () => {
    const port = await freePort();
    const db = await openPostgres(pgTest.database.url, { migrate: false, max: 1 });
    try {
      const away = await openPostgres(pgTest.database.url.replace(`:${cluster.port}/`, `:${port}/`), {
        migrate: false,
        availability: db.availability,
      }).then(
        () => 'opened',
        (err: Error) => err.message,
      );
      expect(away).toMatch(/cannot connect to PostgreSQL/);
      expect(db.availability.reachable()).toBe(false);
      expect(db.availability.outage()?.reason).toMatch(/ECONNREFUSED/);
      // A query that the server answers, on a connection pooled before, ends the outage.
      await db.pool.query('SELECT 1');
      expect(db.availability.reachable()).toBe(true);
      expect(db.availability.outage()).toBeNull();
    } finally {
      await db.close();
    }
  });
});
