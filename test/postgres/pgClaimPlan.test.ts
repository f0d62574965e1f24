import { describe, expect, it } from 'vitest';
import { claimShared } from '../../src/operations/claim.js';
import type { NewOperation } from '../../src/operations/storeSeam.js';
import { PgOperationsStore } from '../../src/postgres/operationsStore.js';
import { runPostgres } from '../../src/postgres/scripts.js';
import { CLAIM_PLAN_SQL } from '../../src/postgres/settleGroup.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';

/**
 * The claim's cost on a table the planner has no statistics for (fresh, or last analyzed before a
 * burst): it reads the few rows it claims and their keys' older rows, not every queued row. Left
 * to its estimates (a few queued rows), the planner read them all and tested each one's per-key
 * order with a scan of every queued row: a claim cost O(queued²).
 */

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();

function ops(count: number, keys: number): NewOperation[] {
  return Array.from({ length: count }, (_, i) => ({
    ref: `plan-${i}`,
    operationType: 'Transfer',
    orderKey: `key-${i % keys}`,
    body: `{"n":${i}}`,
    hash: `h${i}`,
  }));
}

describe('the PostgreSQL claim without statistics', () => {
  const pg = useTestPgDatabase();

  it('claims 8 rows of 8 keys reading far fewer rows than are queued', async () => {
    const { pool } = pg.db;
    const store = new PgOperationsStore(pool, { leaseOwner: 'seed' });
    const all = ops(2000, 50);
    for (let i = 0; i < all.length; i += 500) await store.insert(all.slice(i, i + 500), at(0));
    // Half drained: each key has 20 settled rows before its 20 queued ones. No ANALYZE.
    await pool.query(
      `UPDATE outbox SET state = 'accepted', accepted_at = $1 WHERE id <= (SELECT min(id) + 999 FROM outbox)`,
      [at(1)],
    );
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query(CLAIM_PLAN_SQL);
      const read = async () => {
        const { rows } = await client.query<{ n: string }>(
          `SELECT (coalesce(idx_tup_fetch, 0) + seq_tup_read)::text AS n
           FROM pg_stat_xact_user_tables WHERE relname = 'outbox'`,
        );
        return Number(rows[0]?.n);
      };
      const before = await read();
      const { rows } = await runPostgres(
        client,
        claimShared({ now: at(2), owner: 'plan', leaseUntil: at(60_000), limit: 8 }),
      );
      const rowsRead = (await read()) - before;
      expect(new Set(rows.map((r) => r.order_key)).size).toBe(8);
      // 8 claimed, each key's 20 older rows checked, a few rows locked past the cut: about 200.
      expect(rowsRead).toBeLessThan(500);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});
