import { describe, expect, inject, it } from 'vitest';
import { openDaemonStores } from '../../src/app/openStores.js';
import { silentLogger } from '../../src/common/log.js';
import { loadConfig } from '../../src/config/config.js';
import { livenessLock } from '../../src/postgres/advisoryLocks.js';
import { createTestDatabase, terminateBackend, withAdmin } from '../helpers/postgres.js';
import { until } from '../ops/child.js';
import { capturingLogger } from '../outbox/fixtures.js';
import { livenessCases } from './liveness.cases.js';

/** A daemon's liveness on PostgreSQL, a database per case on the run's cluster; then the lost lock. */

const cluster = inject('postgres');

const configFor = (url: string) => loadConfig({ env: {}, overrides: { 'database.url': url } });

livenessCases('postgres', async () => {
  const database = await createTestDatabase(cluster);
  return { config: configFor(database.url), log: silentLogger, cleanup: () => database.drop() };
});

/** The backend holding `owner`'s liveness lock, as `pg_locks` shows it; null while none holds it. */
async function livenessBackend(database: string, owner: string): Promise<number | null> {
  return withAdmin(cluster, async (admin) => {
    const { rows } = await admin.query<{ pid: number }>(
      `SELECT l.pid FROM pg_locks l JOIN pg_database d ON d.oid = l.database
        WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND d.datname = $1
          AND ((l.classid::int8 << 32) | l.objid::int8) = ${livenessLock('$2')}`,
      [database, owner],
    );
    return rows[0]?.pid ?? null;
  });
}

describe("a daemon's liveness on postgres only", () => {
  it('its liveness session ended from outside: not alive, then alive again once the lock is re-taken on a new session, and free after its stop', async () => {
    const database = await createTestDatabase(cluster);
    const { log, lines } = capturingLogger();
    const { stores } = await openDaemonStores(configFor(database.url), log);
    const { liveness } = stores;
    try {
      await liveness.start();
      const held = await livenessBackend(database.name, liveness.owner);
      expect(held).not.toBeNull();
      await terminateBackend(cluster, held as number);
      await until('the lock seen lost', () => !liveness.alive());
      expect(lines.some((l) => l.includes('"replica.liveness.lost"'))).toBe(true);
      // Re-taken with backoff on a session of its own: the others see it alive again.
      await until('the lock re-taken', () => liveness.alive());
      const again = await livenessBackend(database.name, liveness.owner);
      expect(again).not.toBeNull();
      expect(again).not.toBe(held);
      await liveness.stop();
      expect(liveness.alive()).toBe(false);
      expect(await livenessBackend(database.name, liveness.owner)).toBeNull();
    } finally {
      await liveness.stop();
      await stores.close();
      await database.drop();
    }
  });

  it("a dead replica's claims found by a later sweep come back and wake the hand-back's listeners", async () => {
    const database = await createTestDatabase(cluster);
    const { stores } = await openDaemonStores(configFor(database.url), silentLogger);
    const { liveness } = stores;
    let wakes = 0;
    liveness.onHandBack(() => {
      wakes += 1;
    });
    try {
      await liveness.start();
      expect(wakes).toBe(0);
      const now = new Date().toISOString();
      await stores.operations.insert(
        [{ ref: 'swept', operationType: 'Transfer', orderKey: 'unit-1', body: '{}', hash: 'h' }],
        now,
      );
      const dead = { owner: 'dead-replica', now, leaseUntil: '2999-01-01T00:00:00.000Z', limit: 1 };
      expect(await stores.operations.claim(dead)).toHaveLength(1);
      await until('a sweep hands it back', () => wakes > 0);
      const mine = await stores.operations.claim({ ...dead, owner: liveness.owner });
      expect(mine.map((r) => r.marketplaceTransactionRef)).toEqual(['swept']);
    } finally {
      await liveness.stop();
      await stores.close();
      await database.drop();
    }
  });
});
