import { describe, expect, it } from 'vitest';
import type { OperationRow } from '../../src/operations/rows.js';
import { ClaimAhead } from '../../src/outbox/claimAhead.js';

/**
 * The claim-ahead buffer alone (src/outbox/claimAhead.ts), its store replaced by claims the test
 * answers by hand: when a claim's group starts (its `limit` is read) and what it brings. What the
 * buffer does against a real store is in test/postgres/pgClaimAhead.test.ts.
 */

/** A claim submitted to the hand-run store. */
interface PendingClaim {
  limit: () => number;
  answer(rows: OperationRow[]): void;
  fail(err: Error): void;
}

const row = (id: number) => ({ id }) as OperationRow;

/** Lets every promise callback that can run now run (no time passes). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

function handRunBuffer(cap: number) {
  const claims: PendingClaim[] = [];
  const state = { held: 0 };
  const buffer = new ClaimAhead({
    claim: (limit) =>
      new Promise<OperationRow[]>((resolve, reject) => {
        claims.push({ limit, answer: resolve, fail: reject });
      }),
    heldElsewhere: () => state.held,
    cap,
    maxWaitMs: 60_000,
    now: () => 0,
    wake: () => {},
    failed: (err) => {
      throw err;
    },
  });
  return { buffer, claims, state };
}

describe('ClaimAhead.take with an empty buffer', () => {
  it('takes the rows of whichever claim brings some first, not only the claim it found waiting for a group', async () => {
    const { buffer, claims, state } = handRunBuffer(4);
    state.held = 2;
    buffer.topUp();
    expect(claims[0]!.limit()).toBe(2); // its group starts: 2 rows asked, the claim now running
    state.held = 0;
    buffer.topUp(); // room for 2 more: a second claim waits for the next group
    expect(claims).toHaveLength(2);

    let taken: OperationRow[] | undefined;
    void buffer.take(1).then((r) => {
      taken = r.rows;
    });
    await settle();
    expect(taken).toBeUndefined();

    claims[0]!.answer([row(11), row(12)]);
    await settle();
    // Waiting for the second claim instead, the free slot would sit idle a whole group longer.
    expect(taken?.map((r) => r.id)).toEqual([11]);
    expect(buffer.size).toBe(1);

    state.held = 1; // the row taken is in flight now
    expect(claims[1]!.limit()).toBe(2);
    claims[1]!.answer([row(13)]);
    await buffer.settled();
    expect(buffer.size).toBe(2);
  });

  it('answers with no rows once every claim under way has come back empty', async () => {
    const { buffer, claims } = handRunBuffer(4);
    buffer.topUp();
    claims[0]!.limit();

    let taken: OperationRow[] | undefined;
    void buffer.take(2).then((r) => {
      taken = r.rows;
    });
    await settle();
    expect(taken).toBeUndefined();
    claims[0]!.answer([]);
    await settle();
    expect(taken).toEqual([]);
  });

  it('claims for itself when no claim is under way, and hands that claim its failure', async () => {
    const { buffer, claims } = handRunBuffer(4);
    const taking = buffer.take(3);
    expect(claims).toHaveLength(1);
    expect(claims[0]!.limit()).toBe(4);
    claims[0]!.answer([row(1), row(2), row(3), row(4)]);
    const { rows } = await taking;
    expect(rows.map((r) => r.id)).toEqual([1, 2, 3]);
    expect(buffer.size).toBe(1);

    buffer.drain();
    const failing = buffer.take(1);
    claims[1]!.limit();
    claims[1]!.fail(new Error('store away'));
    await expect(failing).rejects.toThrow('store away');
  });
});
