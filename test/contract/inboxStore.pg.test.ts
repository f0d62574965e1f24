import { describe, expect, it } from 'vitest';
import { useTestPgDatabase } from '../helpers/pgDatabase.js';
import { inboxStoreCases } from './inboxStore.cases.js';
import { accept, decision, postgresInboxHarness, webhook } from './inboxStores.js';

/** The inbox store seam's contract on PostgreSQL, the file's database emptied before each case. */

const pg = useTestPgDatabase();

inboxStoreCases('postgres', async () => {
  const h = postgresInboxHarness(pg.db);
  await h.reset();
  return h;
});

describe('inbox store on postgres only', () => {
  it('a decision for a row another session holds fails after its grace instead of waiting, storing nothing; it applies once the row is free', async () => {
    const h = postgresInboxHarness(pg.db);
    await h.reset();
    await accept(h.ops, 'R-held');
    // Another session updates the row and stays idle in its transaction, holding the row's lock.
    const holder = await pg.db.pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(
        `UPDATE outbox SET updated_at = updated_at WHERE "marketplaceTransactionRef" = 'R-held'`,
      );
      // Without a bound the receive would wait for the holder's ROLLBACK, which comes only after it.
      await expect(h.inbox.receive(webhook('w-1', decision('R-held', 'approved')))).rejects.toThrow(
        /lock timeout/,
      );
      expect(await h.events()).toEqual([]);
      expect(await h.rows()).toEqual(['R-held accepted']);
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
    // The operator's retry after the 503 finds the row free.
    const result = await h.inbox.receive(webhook('w-1', decision('R-held', 'approved')));
    expect(result.outcome).toBe('applied');
    expect(await h.rows()).toEqual(['R-held approved']);
  });
});
