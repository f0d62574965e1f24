import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PgOperationsStore } from '../../src/postgres/operationsStore.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';

/**
 * Rows that name an outbox row (its attempts, webhook events, the reconciliation's ledger) take
 * `FOR KEY SHARE` on it as they are inserted. The outbox's own row locks must not conflict with
 * that: a claim's SKIP LOCKED passed over a row while the reconciler ledgered it, and the
 * operation waited for the next round (reconcileDaemon.pg's decision case failed on it in CI).
 */

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();

describe('outbox rows locked while another session inserts a row naming them', () => {
  const pg = useTestPgDatabase();
  let holder: pg.PoolClient | undefined;

  beforeEach(async () => {
    await pg.db.pool.query('TRUNCATE outbox, outbox_attempts, changes RESTART IDENTITY CASCADE');
  });
  afterEach(async () => {
    await holder?.query('ROLLBACK');
    holder?.release();
    holder = undefined;
  });

  /** Opens a transaction that ledgers `ids` as the reconciler's catch-up does, and keeps it open. */
  async function ledgerHeldOpen(ids: readonly number[]): Promise<void> {
    holder = await pg.db.pool.connect();
    await holder.query('BEGIN');
    for (const id of ids)
      await holder.query(
        `INSERT INTO reconciliation_ledger (outbox_id, kind, issuance_id, unit_id, amount_kg)
         VALUES ($1, 'tokenization', '7', '101', 1000)`,
        [id],
      );
    const { rows } = await pg.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'transactionid' AND a.state = 'idle in transaction'`,
    );
    // The insert's transaction is open, holding what its foreign-key check took.
    expect(rows[0]?.n).toBeGreaterThan(0);
  }

  it('a claim takes them, a settle moves them, a decision applies, all while the insert is open', async () => {
    const store = new PgOperationsStore(pg.db.pool);
    await store.insert(
      [1, 2, 3].map((n) => ({
        ref: `lock-${n}`,
        operationType: 'Tokenization',
        orderKey: null,
        body: `{"n":${n}}`,
        hash: `h${n}`,
      })),
      at(0),
    );
    // Row 1 is claimed before the insert, rows 2 and 3 while it is open.
    const first = await store.claim({ owner: 'replica-a', now: at(1), leaseUntil: at(60_000), limit: 1 });
    expect(first.map((r) => r.id)).toEqual([1]);
    await ledgerHeldOpen([1, 2, 3]);

    const claimed = await store.claim({ owner: 'replica-a', now: at(2), leaseUntil: at(60_000), limit: 10 });
    expect(claimed.map((r) => r.id)).toEqual([2, 3]);

    const settled = await store.settle(
      { id: 1, ref: 'lock-1', owner: 'replica-a', now: at(3) },
      { startedAt: at(3), durationMs: 1, statusCode: 202, error: null },
      { to: 'accepted', response: '{}', status: 202 },
    );
    expect(settled).toBe(true);
    await store.recordDecision({ id: 1, ref: 'lock-1', decision: 'approved', reason: null, now: at(4) });

    const { rows } = await pg.db.pool.query<{ id: number; state: string }>(
      'SELECT id::float8 AS id, state FROM outbox ORDER BY id',
    );
    expect(rows).toEqual([
      { id: 1, state: 'approved' },
      { id: 2, state: 'sending' },
      { id: 3, state: 'sending' },
    ]);
  });
});
