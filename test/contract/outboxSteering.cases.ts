import { describe, expect, it } from 'vitest';
import { SteerError } from '../../src/common/errors.js';
import type { OperationsStore } from '../../src/operations/storeSeam.js';
import type { OutboxAccess } from '../../src/outbox/access.js';
import { cancelOperation, retryOperation } from '../../src/outbox/manage.js';
import { transfer } from '../outbox/fixtures.js';

/**
 * Steering when another writer moves the row between the read and the store's guarded write (the
 * dispatcher claims it, a person cancels it), the same cases on SQLite (outboxSteering.sqlite.test.ts)
 * and PostgreSQL (outboxSteering.pg.test.ts): the guard refuses the stale move, the row is judged
 * again, and the answer names the state it is really in; nothing else changes. The other writer is
 * real SQL run on the store at exactly that moment.
 */

export const T0 = Date.parse('2026-03-01T12:00:00.000Z');

/** One store as steering sees it, and the SQL another writer runs on it. */
export interface Side {
  outbox: OutboxAccess;
  exec(sql: string): Promise<void>;
  state(ref: string): Promise<string>;
}

/** The outbox with `sql` run by "another writer" just before the store's first move `method`. */
function interleaved(side: Side, method: 'cancel' | 'retryFailed', sql: string): OutboxAccess {
  const store = side.outbox.store;
  let first = true;
  const before = async () => {
    if (first) {
      first = false;
      await side.exec(sql);
    }
  };
  // The real store for everything else (its methods run with the real store as `this`).
  const racing = Object.create(store) as OperationsStore;
  if (method === 'cancel')
    racing.cancel = async (op, now) => {
      await before();
      return store.cancel(op, now);
    };
  else
    racing.retryFailed = async (op, now) => {
      await before();
      return store.retryFailed(op, now);
    };
  return { ...side.outbox, store: racing };
}

const where = (ref: string) => `WHERE "marketplaceTransactionRef" = '${ref}'`;

/** Registers the cases on `dialect`; `sideOf` gives a case the store (each case uses refs of its own). */
export function outboxSteeringCases(dialect: 'sqlite' | 'postgres', sideOf: () => Side): void {
  describe(`steering against a concurrent writer on ${dialect}`, () => {
    it('cancel of a row the dispatcher claims meanwhile: 409 being sent, the claim stands', async () => {
      const side = sideOf();
      const ref = `claimed-${dialect}`;
      expect((await side.outbox.enqueue(transfer(ref))).status).toBe(201);
      const outbox = interleaved(
        side,
        'cancel',
        `UPDATE outbox SET state = 'sending', lease_owner = 'd', lease_until = '2999-01-01T00:00:00.000Z' ${where(ref)}`,
      );
      const refused = await cancelOperation(outbox, ref).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(SteerError);
      expect((refused as SteerError).message).toMatch(
        new RegExp(`cannot cancel ${ref}: it is being sent right now`),
      );
      expect(await side.state(ref)).toBe('sending');
    });

    it('retry of a failed row a person cancels meanwhile: 409 it is cancelled, still cancelled', async () => {
      const side = sideOf();
      const ref = `cancelled-${dialect}`;
      expect((await side.outbox.enqueue(transfer(ref))).status).toBe(201);
      await side.exec(`UPDATE outbox SET state = 'failed', finished_at = updated_at ${where(ref)}`);
      const outbox = interleaved(side, 'retryFailed', `UPDATE outbox SET state = 'cancelled' ${where(ref)}`);
      const refused = await retryOperation(outbox, ref).catch((e: unknown) => e);
      expect((refused as SteerError).message).toMatch(new RegExp(`cannot retry ${ref}: it is cancelled`));
      expect(await side.state(ref)).toBe('cancelled');
    });

    it('cancel of a queued row a person cancels meanwhile: 200 with the cancelled entry', async () => {
      const side = sideOf();
      const ref = `twice-${dialect}`;
      expect((await side.outbox.enqueue(transfer(ref))).status).toBe(201);
      const outbox = interleaved(side, 'cancel', `UPDATE outbox SET state = 'cancelled' ${where(ref)}`);
      expect(await cancelOperation(outbox, ref)).toMatchObject({
        marketplaceTransactionRef: ref,
        state: 'cancelled',
      });
    });
  });
}
