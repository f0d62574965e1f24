import type pg from 'pg';
import { beforeEach } from 'vitest';
import type { NewOperation } from '../../src/operations/storeSeam.js';
import { CLAIM_PLAN_SQL } from '../../src/postgres/settleGroup.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';

/** The file's test database (call in a describe), its outbox emptied before each test. */
export function useEmptyOutbox(): ReturnType<typeof useTestPgDatabase> {
  const pg = useTestPgDatabase();
  beforeEach(async () => {
    await pg.db.pool.query('TRUNCATE outbox CASCADE');
  });
  return pg;
}

/** The claim tests' clock: `ms` after 2026-01-01T00:00:00Z, as ISO text. */
export const at = (ms: number): string => new Date(Date.parse('2026-01-01T00:00:00.000Z') + ms).toISOString();

/** `count` operations spread over `keys` order keys in turn (`key-0`, `key-1`, ...), refs `PREFIX-i`. */
export function keyedOps(count: number, keys: number, prefix: string): NewOperation[] {
  return Array.from({ length: count }, (_, i) => ({
    ref: `${prefix}-${i}`,
    operationType: 'Transfer',
    orderKey: `key-${i % keys}`,
    body: `{"n":${i}}`,
    hash: `h${i}`,
  }));
}

/** Rows of `outbox` read (index fetches and sequential reads) in this transaction so far. */
export async function rowsReadSoFar(client: pg.PoolClient): Promise<number> {
  const { rows } = await client.query<{ n: string }>(
    `SELECT (coalesce(idx_tup_fetch, 0) + seq_tup_read)::text AS n
     FROM pg_stat_xact_user_tables WHERE relname = 'outbox'`,
  );
  return Number(rows[0]?.n);
}

/** Runs `fn` in a transaction with the claim's plan pinned, rolled back after. */
export async function inClaimTransaction<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(CLAIM_PLAN_SQL);
    return await fn(client);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}
