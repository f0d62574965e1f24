import type pg from 'pg';
import { releaseDeadPg } from '../../src/postgres/liveness.js';
import type { PgOperationsStore } from '../../src/postgres/operationsStore.js';

/**
 * Hands back the outbox rows of every claimant whose liveness lock is free, as `self`'s store
 * (never its own): the outbox half of what the replica presence's sweep does (src/postgres/presence.ts),
 * for tests of the claims alone. Returns the rows handed back, by id.
 */
export async function releaseDeadOutbox(
  pool: pg.Pool,
  store: PgOperationsStore,
  self: string,
  nowIso: string,
): Promise<Array<{ id: number; ref: string }>> {
  const perOwner = await releaseDeadPg(pool, self, (owner) => store.releaseOwner(owner, nowIso));
  return perOwner.flat().sort((a, b) => a.id - b.id);
}
