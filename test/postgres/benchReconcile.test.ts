import { describe, expect, inject, it } from 'vitest';
import { issuanceIdOf } from '../bench/lib/reconcileSeed.js';
import { TINY, TINY_FINDINGS } from '../bench/lib/reconcileTiny.js';
import { measure, seedPostgres } from '../bench/reconcile.js';
import { createTestDatabase } from '../helpers/postgres.js';

/**
 * The reconciliation bench's books on PostgreSQL at a tiny size: the same findings as on SQLite
 * (the statements are written once for both stores; the full pass's read of the log's retirements
 * finds the matching statuses with a loose index scan on either).
 */
describe('the reconciliation bench on PostgreSQL', () => {
  it('seeds books whose full pass finds exactly the inconsistencies put in', async () => {
    const database = await createTestDatabase(inject('postgres'));
    try {
      await seedPostgres(database.url, TINY);
      const report = await measure({
        mode: 'measure',
        dialect: 'postgres',
        target: database.url,
        runs: 2,
        scope: [issuanceIdOf(3), issuanceIdOf(5)],
      });
      expect(report.openedByKind).toEqual(TINY_FINDINGS);
      expect(report.open).toBe(10);
      expect(report.operations).toBe(TINY.outbox);
      expect(report.baselineRows).toEqual([TINY.outbox, 200]);
    } finally {
      await database.drop();
    }
  }, 180_000);
});
