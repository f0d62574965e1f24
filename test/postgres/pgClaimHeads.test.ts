import fc from 'fast-check';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { claimShared, claimSharedHeads, nextClaimForm } from '../../src/operations/claim.js';
import { PgOperationsStore } from '../../src/postgres/operationsStore.js';
import { runPostgres } from '../../src/postgres/scripts.js';
import { at, inClaimTransaction, keyedOps, rowsReadSoFar, useEmptyOutbox } from './claimFixtures.js';

/**
 * The shared claim read through each key's oldest unsent row (`claimSharedHeads`): the form for few
 * keys. It must claim exactly what the walk in id order claims, on any outbox, and read one row per
 * key where the walk reads the whole queue.
 */

const NOW = at(10_000);
const ops = (count: number, keys: number, prefix = 'heads') => keyedOps(count, keys, prefix);

type Form = typeof claimShared;

/** One claim by `form` in its own transaction with the claim's plan pinned, rolled back after. */
async function claimOnce(pool: pg.Pool, form: Form, limit: number) {
  return inClaimTransaction(pool, async (client) => {
    const before = await rowsReadSoFar(client);
    const { rows } = await runPostgres(
      client,
      form({ now: NOW, owner: 'heads', leaseUntil: at(70_000), limit }),
    );
    const claimed = rows
      .map((r) => `${Number(r.id)}:${String(r.from_state)}`)
      .sort((a, b) => Number.parseInt(a, 10) - Number.parseInt(b, 10));
    return { claimed, rowsRead: (await rowsReadSoFar(client)) - before };
  });
}

describe('the form of the next shared claim', () => {
  it('walks until a walk comes up short, then asks each key until more keys are free than asked', () => {
    expect(nextClaimForm('walk', 8, 8)).toBe('walk');
    expect(nextClaimForm('walk', 8, 3)).toBe('heads');
    expect(nextClaimForm('walk', 1, 0)).toBe('heads');
    // By key, getting what it asked for is no reason to walk: one row at a time behind 3 keys.
    expect(nextClaimForm('heads', 1, 1)).toBe('heads');
    expect(nextClaimForm('heads', 8, 3)).toBe('heads');
    expect(nextClaimForm('heads', 8, 9)).toBe('walk');
  });
});

describe('the shared claim through each key’s oldest unsent row', () => {
  const pg = useEmptyOutbox();

  it('claims the three free keys’ next rows behind 5,000 queued, reading a few rows where the walk reads them all', async () => {
    const { pool } = pg.db;
    const store = new PgOperationsStore(pool);
    const all = ops(5_000, 3);
    for (let i = 0; i < all.length; i += 500) await store.insert(all.slice(i, i + 500), at(0));
    const walk = await claimOnce(pool, claimShared, 8);
    const heads = await claimOnce(pool, claimSharedHeads, 8);
    expect(heads.claimed).toHaveLength(3);
    expect(heads.claimed).toEqual(walk.claimed);
    expect(walk.rowsRead).toBeGreaterThan(4_000);
    expect(heads.rowsRead).toBeLessThan(50);
  });

  it('the store asks each key after a short walk, and walks again once more keys are free than asked', async () => {
    const { pool } = pg.db;
    const store = new PgOperationsStore(pool);
    const all = ops(600, 3, 'adaptive');
    await store.insert(all, at(0));
    const claim = (limit: number, round: number) =>
      store.claim({ owner: 'adaptive', now: at(1_000 + round), leaseUntil: at(9_000_000), limit });
    const settle = (rows: Awaited<ReturnType<typeof claim>>, round: number) =>
      Promise.all(
        rows.map((row) =>
          store.settle(
            { id: row.id, ref: row.marketplaceTransactionRef, owner: 'adaptive', now: at(1_000 + round) },
            { startedAt: at(0), durationMs: 1, statusCode: 200, error: null },
            { to: 'accepted', response: '{}', status: 200 },
          ),
        ),
      );
    expect(store.claimForm).toBe('walk');
    // 3 keys, 8 asked: the walk reads all 600 queued rows to find 3.
    const first = await claim(8, 0);
    expect(first).toHaveLength(3);
    expect(store.claimForm).toBe('heads');
    // Every key's row out: nothing free, and the claim by key says so without reading the queue.
    expect(await claim(1, 1)).toEqual([]);
    expect(store.claimForm).toBe('heads');
    // One settled at a time, one claimed: each claim by key finds the one key it frees, as asked.
    let out = first;
    for (let round = 2; round <= 5; round++) {
      const [done, ...rest] = out;
      await settle([done!], round);
      const rows = await claim(1, round);
      expect(rows).toHaveLength(1);
      expect(rows[0]?.order_key).toBe(done?.order_key);
      expect(store.claimForm).toBe('heads');
      out = [...rest, ...rows];
    }
    // 50 more keys arrive: a claim by key finds more free keys than it asked for, and walks again.
    await store.insert(
      ops(50, 50, 'burst').map((o, i) => ({ ...o, orderKey: `burst-${i}` })),
      at(0),
    );
    expect(await claim(8, 10)).toHaveLength(8);
    expect(store.claimForm).toBe('walk');
  });

  it('claims exactly what the walk claims, on any outbox', async () => {
    const { pool } = pg.db;
    const store = new PgOperationsStore(pool);
    const row = fc.record({
      key: fc.option(fc.integer({ min: 0, max: 6 }), { freq: 5 }),
      state: fc.constantFrom('queued', 'queued', 'sending', 'accepted', 'failed', 'cancelled'),
      due: fc.boolean(),
      leaseRunOut: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(row, { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 12 }),
        async (rows, limit) => {
          await pool.query('TRUNCATE outbox CASCADE');
          const inserted = await store.insert(
            rows.map((r, i) => ({
              ref: `p-${i}`,
              operationType: 'Transfer',
              orderKey: r.key === null ? null : `k-${r.key}`,
              body: '{}',
              hash: `h${i}`,
            })),
            at(0),
          );
          for (const [i, r] of rows.entries()) {
            const id = inserted[i]!.id;
            await pool.query(
              `UPDATE outbox SET state = $2, next_attempt_at = $3, lease_owner = $4, lease_until = $5 WHERE id = $1`,
              [
                id,
                r.state,
                r.due ? at(0) : at(60_000),
                r.state === 'sending' ? 'other' : null,
                r.state === 'sending' ? (r.leaseRunOut ? at(5_000) : at(60_000)) : null,
              ],
            );
          }
          const walk = await claimOnce(pool, claimShared, limit);
          const heads = await claimOnce(pool, claimSharedHeads, limit);
          expect(heads.claimed).toEqual(walk.claimed);
        },
      ),
      { numRuns: 60, endOnFailure: true },
    );
  });
});
