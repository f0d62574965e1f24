import { beforeEach, describe, expect, it } from 'vitest';
import type { NewOperation } from '../../src/operations/storeSeam.js';
import { PgOperationsStore } from '../../src/postgres/operationsStore.js';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';

/**
 * A settle and a claim of one replica in one group (postgres/settleGroup.ts): the settled row's
 * next one on its key is claimed in the settle's own transaction (its first message), so it is in
 * hand the moment its predecessor settles. Per-key order holds against a second replica claiming
 * meanwhile, and a successor whose lease runs out (its replica dead) is taken by the other.
 */

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms).toISOString();
const LEASE_MS = 60_000;

function ops(count: number, keys: number, prefix: string): NewOperation[] {
  return Array.from({ length: count }, (_, i) => ({
    ref: `${prefix}-${i}`,
    operationType: 'Transfer',
    orderKey: `${prefix}-key-${i % keys}`,
    body: `{"n":${i}}`,
    hash: `${prefix}-h${i}`,
  }));
}

const claimAt = (owner: string, ms: number, limit: number) => ({
  owner,
  now: at(ms),
  leaseUntil: at(ms + LEASE_MS),
  limit,
});

const accepted = (ms: number) =>
  [
    { startedAt: at(ms), durationMs: 1, statusCode: 202, error: null },
    { to: 'accepted', response: '{}', status: 202 },
  ] as const;

describe("a settled row's next one on its key, claimed in the settle's transaction", () => {
  const pg = useTestPgDatabase();
  const rows = async () =>
    (
      await pg.db.pool.query<{
        id: number;
        order_key: string;
        state: string;
        lease_owner: string | null;
        xmin: string;
      }>('SELECT id::float8 AS id, order_key, state, lease_owner, xmin::text AS xmin FROM outbox ORDER BY id')
    ).rows;

  beforeEach(async () => {
    await pg.db.pool.query('TRUNCATE outbox, outbox_attempts, changes RESTART IDENTITY CASCADE');
  });

  it('two replicas: the successor goes to the settling one, in the same transaction, never beside its predecessor', async () => {
    const a = new PgOperationsStore(pg.db.pool);
    const b = new PgOperationsStore(pg.db.pool);
    // Two keys, three rows each: 1, 3, 5 on key 0; 2, 4, 6 on key 1.
    await a.insert(ops(6, 2, 'succ'), at(0));
    expect((await a.claim(claimAt('replica-a', 1, 8))).map((r) => r.id)).toEqual([1, 2]);
    // Both keys are out: B finds nothing, however much it asks for.
    expect(await b.claim(claimAt('replica-b', 2, 8))).toEqual([]);

    // A settles row 1 and claims in the same turn (one group); B claims at the same time.
    const [settled, claimedByA, claimedByB] = await Promise.all([
      a.settle({ id: 1, ref: 'succ-0', owner: 'replica-a', now: at(3) }, ...accepted(3)),
      a.claim(claimAt('replica-a', 3, 8)),
      b.claim(claimAt('replica-b', 3, 8)),
    ]);
    expect(settled).toBe(true);
    const successor = [...claimedByA, ...claimedByB].map((r) => r.id);
    // Row 3, key 0's next, claimed once; row 5 waits behind it, key 1's rows behind row 2.
    expect(successor).toEqual([3]);
    const after = await rows();
    expect(after.map((r) => [r.id, r.state])).toEqual([
      [1, 'accepted'],
      [2, 'sending'],
      [3, 'sending'],
      [4, 'queued'],
      [5, 'queued'],
      [6, 'queued'],
    ]);
    if (claimedByA.length > 0) {
      // Claimed by the settling replica: in the settle's own transaction.
      expect(after[2]!.lease_owner).toBe('replica-a');
      expect(after[2]!.xmin).toBe(after[0]!.xmin);
    }
    // Never two rows of a key out at once, whoever claims.
    for (const key of ['succ-key-0', 'succ-key-1'])
      expect(after.filter((r) => r.order_key === key && r.state === 'sending')).toHaveLength(1);
  });

  it("a settle and its replica's claim share one transaction: the successor is claimed with it", async () => {
    const a = new PgOperationsStore(pg.db.pool);
    await a.insert(ops(3, 1, 'same'), at(0));
    expect((await a.claim(claimAt('replica-a', 1, 1))).map((r) => r.id)).toEqual([1]);
    const [settled, claimed] = await Promise.all([
      a.settle({ id: 1, ref: 'same-0', owner: 'replica-a', now: at(2) }, ...accepted(2)),
      a.claim(claimAt('replica-a', 2, 4)),
    ]);
    expect(settled).toBe(true);
    expect(claimed.map((r) => r.id)).toEqual([2]);
    const after = await rows();
    expect(after.map((r) => r.state)).toEqual(['accepted', 'sending', 'queued']);
    expect(after[1]!.xmin).toBe(after[0]!.xmin);
  });

  it('a successor whose replica died is handed to the other when its lease runs out, in order', async () => {
    const a = new PgOperationsStore(pg.db.pool);
    const b = new PgOperationsStore(pg.db.pool);
    await a.insert(ops(3, 1, 'lost'), at(0));
    await a.claim(claimAt('replica-a', 1, 1));
    const [, successor] = await Promise.all([
      a.settle({ id: 1, ref: 'lost-0', owner: 'replica-a', now: at(2) }, ...accepted(2)),
      a.claim(claimAt('replica-a', 2, 1)),
    ]);
    expect(successor.map((r) => r.id)).toEqual([2]);
    // A dies holding row 2: while its lease stands B takes nothing of the key (not row 3).
    expect(await b.claim(claimAt('replica-b', 10, 8))).toEqual([]);
    // Once it has run out, B takes row 2 again, and row 3 only after row 2 settles.
    const late = 2 + LEASE_MS + 1;
    expect((await b.claim(claimAt('replica-b', late, 8))).map((r) => r.id)).toEqual([2]);
    const stale = await a.settle(
      { id: 2, ref: 'lost-1', owner: 'replica-a', now: at(late + 1) },
      ...accepted(late + 1),
    );
    expect(stale).toBe(false);
    const [settled, next] = await Promise.all([
      b.settle({ id: 2, ref: 'lost-1', owner: 'replica-b', now: at(late + 2) }, ...accepted(late + 2)),
      b.claim(claimAt('replica-b', late + 2, 8)),
    ]);
    expect(settled).toBe(true);
    expect(next.map((r) => r.id)).toEqual([3]);
    expect((await rows()).map((r) => [r.state, r.lease_owner])).toEqual([
      ['accepted', null],
      ['accepted', null],
      ['sending', 'replica-b'],
    ]);
  });
});
