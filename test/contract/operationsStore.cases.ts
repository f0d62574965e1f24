import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { NewOperation } from '../../src/operations/storeSeam.js';
import { ME, type OperationsHarness } from './operationsStores.js';

/**
 * The operations store seam, the same cases on SQLite (operationsStore.sqlite.test.ts) and
 * PostgreSQL (operationsStore.pg.test.ts): every transition the table allows commits with its feed
 * row and its subscribers' deliveries, and one it refuses changes nothing at all.
 */

const T0 = '2026-03-01T12:00:00.000Z';
const T1 = '2026-03-01T12:01:00.000Z';
const T2 = '2026-03-01T12:02:00.000Z';
const LATER = '2026-03-01T13:00:00.000Z';
const LEASE = '2026-03-01T12:30:00.000Z';

const op = (ref: string, orderKey: string | null): NewOperation => ({
  ref,
  operationType: 'Transfer',
  orderKey,
  body: `{"ref":"${ref}"}`,
  hash: `h-${ref}`,
});

/** Registers the cases on `dialect`; `open` gives each case an empty store. */
export function operationsStoreCases(
  dialect: 'sqlite' | 'postgres',
  open: () => Promise<OperationsHarness>,
): void {
  describe(`operations store seam on ${dialect}`, () => {
    let h: OperationsHarness;
    beforeEach(async () => {
      h = await open();
    });
    afterEach(async () => {
      await h.close();
    });

    const claimAll = (now = T1) => h.store.claim({ owner: ME, now, leaseUntil: LEASE, limit: 10 });
    const attempt = { startedAt: T1, durationMs: 5, statusCode: 503, error: 'unavailable' };

    it('enqueue is idempotent on the ref: a repeat changes nothing and is not returned', async () => {
      const first = await h.store.insert([op('a', 'k'), op('b', 'k')], T0);
      expect(first.map((r) => [r.marketplaceTransactionRef, r.state, r.next_attempt_at])).toEqual([
        ['a', 'queued', T0],
        ['b', 'queued', T0],
      ]);
      const again = await h.store.insert([op('a', 'k'), op('c', null)], T1);
      expect(again.map((r) => r.marketplaceTransactionRef)).toEqual(['c']);
      expect((await h.rows()).map((r) => [r.ref, r.next])).toEqual([
        ['a', T0],
        ['b', T0],
        ['c', T1],
      ]);
      expect(await h.feed()).toEqual(['a queued', 'b queued', 'c queued']);
    });

    it('claims the oldest row of each order key only, and the next once the older settles', async () => {
      await h.store.insert([op('k1-a', 'k1'), op('k2-a', 'k2'), op('k1-b', 'k1'), op('free', null)], T0);
      const first = await claimAll();
      expect(first.map((r) => [r.marketplaceTransactionRef, r.state, r.attempts, r.lease_owner])).toEqual([
        ['k1-a', 'sending', 1, ME],
        ['k2-a', 'sending', 1, ME],
        ['free', 'sending', 1, ME],
      ]);
      expect(await claimAll()).toEqual([]);
      const k1a = first[0];
      if (!k1a) throw new Error('no claim');
      await h.store.settle({ id: k1a.id, ref: 'k1-a', owner: ME, now: T1 }, attempt, {
        to: 'accepted',
        response: '{}',
        status: 202,
      });
      expect((await claimAll(T2)).map((r) => r.marketplaceTransactionRef)).toEqual(['k1-b']);
      // Claims are no change to the outside: only the enqueues and the acceptance are in the feed.
      expect(await h.feed()).toEqual([
        'k1-a queued',
        'k2-a queued',
        'k1-b queued',
        'free queued',
        'k1-a accepted',
      ]);
    });

    it('a claim given a function takes its parameters when it runs, not when it is called', async () => {
      await h.store.insert([op('later', null)], T2);
      let now = T1;
      const claiming = h.store.claim(() => ({ owner: ME, now, leaseUntil: LEASE, limit: 10 }));
      // Still before the claim's transaction: with T1 the row (due at T2) would not be claimable.
      now = T2;
      const claimed = await claiming;
      expect(claimed.map((r) => [r.marketplaceTransactionRef, r.state, r.updated_at])).toEqual([
        ['later', 'sending', T2],
      ]);
    });

    it('settles accepted, requeued (refunded) and failed, each with its feed row and delivery', async () => {
      await h.store.insert([op('ok', null), op('again', null), op('bad', null)], T0);
      const [ok, again, bad] = await claimAll();
      if (!ok || !again || !bad) throw new Error('no claim');
      const claim = (id: number, ref: string) => ({ id, ref, owner: ME, now: T1 });
      expect(
        await h.store.settle(claim(ok.id, 'ok'), attempt, { to: 'accepted', response: '{}', status: 202 }),
      ).toBe(true);
      expect(
        await h.store.settle(claim(again.id, 'again'), attempt, {
          to: 'queued',
          nextAttemptAt: LATER,
          error: 'busy',
          status: 503,
          refund: true,
        }),
      ).toBe(true);
      expect(
        await h.store.settle(claim(bad.id, 'bad'), attempt, { to: 'failed', error: 'gone', status: 410 }),
      ).toBe(true);
      expect(await h.rows()).toEqual([
        { ref: 'ok', state: 'accepted', attempts: 1, next: T0, owner: null },
        { ref: 'again', state: 'queued', attempts: 0, next: LATER, owner: null },
        { ref: 'bad', state: 'failed', attempts: 1, next: T0, owner: null },
      ]);
      expect((await h.feed()).slice(3)).toEqual(['ok accepted', 'bad failed']);
      expect(await h.deliveries()).toEqual(['ok operation.accepted', 'bad operation.failed']);
      expect(await h.attempts()).toBe(3);
      expect(await h.store.nextDueAt()).toBe(LATER);
    });

    it('settles and claims submitted together each get their own answer, the claims after the settles', async () => {
      await h.store.insert(
        [op('k1-a', 'k1'), op('x', null), op('k1-b', 'k1'), op('y', null), op('z', null)],
        T0,
      );
      const [k1a, x] = await h.store.claim({ owner: ME, now: T1, leaseUntil: LEASE, limit: 2 });
      if (!k1a || !x) throw new Error('no claim');
      const accepted = { to: 'accepted', response: '{}', status: 202 } as const;
      const claimOne = (limit: number) => h.store.claim({ owner: ME, now: T2, leaseUntil: LEASE, limit });
      // One turn, as the dispatcher submits a settle and its refill (PostgreSQL groups them).
      const answers = await Promise.all([
        h.store.settle({ id: k1a.id, ref: 'k1-a', owner: ME, now: T2 }, attempt, accepted),
        h.store.settle({ id: x.id, ref: 'x', owner: 'someone-else', now: T2 }, attempt, accepted),
        claimOne(1),
        claimOne(2),
      ]);
      expect(answers[0]).toBe(true);
      expect(answers[1]).toBe(false);
      // k1-b became claimable by k1-a's settle; the second claim takes the next two.
      expect(answers[2].map((r) => r.marketplaceTransactionRef)).toEqual(['k1-b']);
      expect(answers[3].map((r) => r.marketplaceTransactionRef)).toEqual(['y', 'z']);
      expect((await h.rows()).map((r) => [r.ref, r.state, r.owner])).toEqual([
        ['k1-a', 'accepted', null],
        ['x', 'sending', ME],
        ['k1-b', 'sending', ME],
        ['y', 'sending', ME],
        ['z', 'sending', ME],
      ]);
      expect((await h.feed()).slice(5)).toEqual(['k1-a accepted']);
      expect(await h.deliveries()).toEqual(['k1-a operation.accepted']);
      expect(await h.attempts()).toBe(2);
    });

    it('a settle by a claimant that lost the lease changes nothing: no feed row, no delivery', async () => {
      await h.store.insert([op('x', null)], T0);
      const [row] = await claimAll();
      if (!row) throw new Error('no claim');
      const stale = { id: row.id, ref: 'x', owner: 'someone-else', now: T1 };
      expect(await h.store.settle(stale, attempt, { to: 'accepted', response: '{}', status: 202 })).toBe(
        false,
      );
      expect(await h.store.release(stale)).toBe(false);
      expect((await h.rows())[0]).toMatchObject({ state: 'sending', owner: ME });
      expect(await h.feed()).toEqual(['x queued']);
      expect(await h.deliveries()).toEqual([]);
      // Released by its own claimant: back to the queue, the attempt not counted.
      expect(await h.store.release({ ...stale, owner: ME })).toBe(true);
      expect((await h.rows())[0]).toMatchObject({ state: 'queued', attempts: 0, owner: null });
    });

    it('records decisions on accepted rows only', async () => {
      await h.store.insert([op('yes', null), op('no', null), op('early', null)], T0);
      const claimed = await claimAll();
      for (const row of claimed.slice(0, 2)) {
        const claim = { id: row.id, ref: row.marketplaceTransactionRef, owner: ME, now: T1 };
        await h.store.settle(claim, attempt, { to: 'accepted', response: '{}', status: 202 });
      }
      const [yes, no, early] = claimed;
      if (!yes || !no || !early) throw new Error('no claim');
      const decide = (id: number, ref: string, decision: 'approved' | 'rejected') =>
        h.store.recordDecision({
          id,
          ref,
          decision,
          reason: decision === 'rejected' ? 'bad unit' : null,
          now: T2,
        });
      expect(await decide(yes.id, 'yes', 'approved')).toBe(true);
      expect(await decide(no.id, 'no', 'rejected')).toBe(true);
      expect(await decide(early.id, 'early', 'approved')).toBe(false);
      expect(await decide(yes.id, 'yes', 'rejected')).toBe(false);
      expect((await h.rows()).map((r) => r.state)).toEqual(['approved', 'rejected', 'sending']);
      expect((await h.feed()).slice(3)).toEqual([
        'yes accepted',
        'no accepted',
        'yes approved',
        'no rejected',
      ]);
      expect((await h.deliveries()).slice(2)).toEqual(['yes operation.approved', 'no operation.rejected']);
    });

    it('cancel, retry and expedite move only the rows the table lets them', async () => {
      await h.store.insert([op('c', null), op('f', null), op('w', null)], T0);
      const claimed = await claimAll();
      const f = claimed[1];
      const w = claimed[2];
      if (!f || !w) throw new Error('no claim');
      await h.store.settle({ id: f.id, ref: 'f', owner: ME, now: T1 }, attempt, {
        to: 'failed',
        error: 'x',
        status: 400,
      });
      await h.store.settle({ id: w.id, ref: 'w', owner: ME, now: T1 }, attempt, {
        to: 'queued',
        nextAttemptAt: LATER,
        error: 'busy',
        status: 503,
        refund: false,
      });
      const c = claimed[0];
      if (!c) throw new Error('no claim');
      // c is sending under a live lease: cancel refuses it.
      expect(await h.store.cancel({ id: c.id, ref: 'c', from: 'sending' }, T1)).toBe(false);
      expect(await h.store.retryFailed({ id: w.id, ref: 'w' }, T2)).toBe(false);
      expect(await h.store.expedite(f.id, T2)).toBe(false);
      expect(await h.store.expedite(w.id, T2)).toBe(true);
      expect(await h.store.nextDueAt()).toBe(T2);
      expect(await h.store.retryFailed({ id: f.id, ref: 'f' }, T2)).toBe(true);
      expect(await h.store.cancel({ id: w.id, ref: 'w', from: 'queued' }, T2)).toBe(true);
      expect(await h.rows()).toEqual([
        { ref: 'c', state: 'sending', attempts: 1, next: T0, owner: ME },
        { ref: 'f', state: 'queued', attempts: 0, next: T2, owner: null },
        { ref: 'w', state: 'cancelled', attempts: 1, next: T2, owner: null },
      ]);
      expect((await h.feed()).slice(3)).toEqual(['f failed', 'f queued', 'w cancelled']);
      expect(await h.deliveries()).toEqual(['f operation.failed', 'w operation.cancelled']);
    });

    it('releaseAll hands every claim back, attempt not counted', async () => {
      await h.store.insert([op('a', 'k'), op('b', null)], T0);
      await claimAll();
      expect((await h.store.releaseAll(T1)).map((r) => r.ref)).toEqual(['a', 'b']);
      expect((await h.rows()).map((r) => [r.state, r.attempts, r.owner])).toEqual([
        ['queued', 0, null],
        ['queued', 0, null],
      ]);
      expect(await h.feed()).toEqual(['a queued', 'b queued']);
    });
  });
}
