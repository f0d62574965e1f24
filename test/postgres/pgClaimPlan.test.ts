import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { claimShared } from '../../src/operations/claim.js';
import { NEXT_DUE_AT } from '../../src/operations/transitions.js';
import { PgOperationsStore } from '../../src/postgres/operationsStore.js';
import { runPostgres } from '../../src/postgres/scripts.js';
import { at, inClaimTransaction, keyedOps, rowsReadSoFar, useEmptyOutbox } from './claimFixtures.js';

/**
 * The claim's cost on a table the planner has no statistics for (fresh, or last analyzed before a
 * burst): it reads the few rows it claims and their keys' older rows, not every queued row. Left
 * to its estimates (a few queued rows), the planner read them all and tested each one's per-key
 * order with a scan of every queued row: a claim cost O(queued²).
 */

const ops = (count: number, keys: number) => keyedOps(count, keys, 'plan');

/** 2,000 rows on 50 keys, the first 1,000 settled: each key has 20 settled rows before its 20 queued ones. */
async function halfDrained(pool: pg.Pool): Promise<void> {
  const store = new PgOperationsStore(pool);
  const all = ops(2000, 50);
  for (let i = 0; i < all.length; i += 500) await store.insert(all.slice(i, i + 500), at(0));
  await pool.query(
    `UPDATE outbox SET state = 'accepted', accepted_at = $1 WHERE id <= (SELECT min(id) + 999 FROM outbox)`,
    [at(1)],
  );
}

/** One claim of 8 rows in `client`'s transaction, and how many rows it read to find them. */
async function claimEight(client: pg.PoolClient) {
  const before = await rowsReadSoFar(client);
  const { rows } = await runPostgres(
    client,
    claimShared({ now: at(2), owner: 'plan', leaseUntil: at(60_000), limit: 8 }),
  );
  return { rows, rowsRead: (await rowsReadSoFar(client)) - before };
}

describe('the PostgreSQL claim without statistics', () => {
  const pg = useEmptyOutbox();

  it('claims 8 rows of 8 keys reading far fewer rows than are queued', async () => {
    const { pool } = pg.db;
    await halfDrained(pool);
    await inClaimTransaction(pool, async (client) => {
      const { rows, rowsRead } = await claimEight(client);
      expect(new Set(rows.map((r) => r.order_key)).size).toBe(8);
      // 8 claimed, each key's order one probe of the unsent rows, a few rows locked past the cut.
      expect(rowsRead).toBeLessThan(500);
    });
  });

  it("tests a key's next row with one probe, however long the key's settled history", async () => {
    const { pool } = pg.db;
    const store = new PgOperationsStore(pool);
    // 8 keys, 400 operations each, all settled but the last of each: a marketplace's units after a
    // while. The claim of each key's next row used to walk the key's 399 older rows (~3,200 read).
    const all = ops(3200, 8);
    for (let i = 0; i < all.length; i += 500) await store.insert(all.slice(i, i + 500), at(0));
    await pool.query(
      `UPDATE outbox SET state = 'accepted', accepted_at = $1
       WHERE id NOT IN (SELECT max(id) FROM outbox GROUP BY order_key)`,
      [at(1)],
    );
    await inClaimTransaction(pool, async (client) => {
      const { rows, rowsRead } = await claimEight(client);
      expect(new Set(rows.map((r) => r.order_key)).size).toBe(8);
      expect(rowsRead).toBeLessThan(100);
    });
  });

  it("walks past keys in flight reading about two rows per queued row, not each key's history", async () => {
    const { pool } = pg.db;
    await halfDrained(pool);
    // 46 of the 50 keys have their next row out: only 4 rows are claimable, fewer than the limit,
    // so the claim walks every queued row. Each used to be tested against its key's 20 settled
    // rows (~20,000 rows read, 47 ms); now one probe of the unsent rows' index settles it.
    await pool.query(
      `UPDATE outbox SET state = 'sending', lease_owner = 'other', lease_until = $1
       WHERE id IN (SELECT min(id) FROM outbox WHERE state = 'queued' GROUP BY order_key ORDER BY 1 LIMIT 46)`,
      [at(60_000)],
    );
    const free = await pool.query<{ id: number; order_key: string }>(
      `SELECT min(id)::float8 AS id, order_key FROM outbox WHERE state = 'queued'
       AND order_key NOT IN (SELECT order_key FROM outbox WHERE state = 'sending') GROUP BY order_key`,
    );
    expect(free.rows).toHaveLength(4);
    await inClaimTransaction(pool, async (client) => {
      const { rows, rowsRead } = await claimEight(client);
      // Exactly the free keys' next rows: no key with a row out gets a second one.
      expect(rows.map((r) => Number(r.id)).sort((a, b) => a - b)).toEqual(
        free.rows.map((r) => Number(r.id)).sort((a, b) => a - b),
      );
      // 954 queued rows walked, one probe of the unsent rows' index each.
      expect(rowsRead).toBeLessThan(3_000);
    });
  });

  it('still holds a key back behind an older row retried after newer ones settled', async () => {
    const { pool } = pg.db;
    const store = new PgOperationsStore(pool);
    await store.insert(ops(3, 1), at(0));
    const ids = (
      await pool.query<{ id: number }>('SELECT id::float8 AS id FROM outbox ORDER BY id')
    ).rows.map((r) => Number(r.id));
    // The first row was retried by a person (queued again) after the second was accepted: the
    // third's predecessor is settled, yet an older row of its key is not.
    await pool.query(`UPDATE outbox SET state = 'accepted', accepted_at = $1 WHERE id = $2`, [at(1), ids[1]]);
    await inClaimTransaction(pool, async (client) => {
      const { rows } = await runPostgres(
        client,
        claimShared({ now: at(2), owner: 'plan', leaseUntil: at(60_000), limit: 8 }),
      );
      expect(rows.map((r) => Number(r.id))).toEqual([ids[0]]);
    });
  });

  it('finds when the next queued row falls due reading one row, however many are queued', async () => {
    const { pool } = pg.db;
    await halfDrained(pool);
    await pool.query(`UPDATE outbox SET next_attempt_at = $1 WHERE id = (SELECT max(id) FROM outbox)`, [
      at(-5),
    ]);
    await inClaimTransaction(pool, async (client) => {
      const before = await rowsReadSoFar(client);
      const { rows } = await runPostgres(client, NEXT_DUE_AT);
      expect(rows).toEqual([{ at: at(-5) }]);
      // 1,000 rows queued: the partial index of queued rows answers with its first entry.
      expect((await rowsReadSoFar(client)) - before).toBeLessThan(5);
    });
  });
});
