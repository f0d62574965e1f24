import { afterAll, afterEach, beforeAll, inject } from 'vitest';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

/** What a dispatcher test on PostgreSQL works against: a fresh database and the simulator. */
export interface PgOutboxEnv {
  database: TestDatabase;
  pgDb: PgDatabase;
  sim: Simulator;
}

/**
 * A throwaway database on the shared cluster and a simulator answering /notify, for the file that
 * calls this (its fields are set once its beforeAll ran); each test starts with an empty outbox.
 */
export function usePgOutbox(): PgOutboxEnv {
  const cluster = inject('postgres');
  const env = {} as PgOutboxEnv;
  beforeAll(async () => {
    env.database = await createTestDatabase(cluster);
    env.pgDb = await openPostgres(env.database.url);
    env.sim = await startSimulator({ webhook: { policy: 'none' } });
  });
  afterEach(async () => {
    env.sim.faults.clear();
    await env.pgDb.pool.query(
      'TRUNCATE outbox, outbox_attempts, changes, deliveries, webhook_events, daemon_state RESTART IDENTITY CASCADE',
    );
  });
  afterAll(async () => {
    await env.sim?.close();
    await env.pgDb?.close();
    await env.database?.drop();
  });
  return env;
}
