import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Books, hoursAfter, type ReconcileStoreUnderTest, reconcileSettings } from './reconcileStores.js';
import { expectReopened, expectResolved, noticesSince, openFindings, rowOf } from './reconciliation.cases.js';

/**
 * retirement-missing on both stores: an approved Retire matched with the public units log's
 * retirements as `reconcile.retire_match` says, within `reconcile.retire_window_hours` of its
 * approval (reconciliation.sqlite.test.ts, reconciliation.pg.test.ts).
 */

export function reconciliationRetireCases(
  kind: ReconcileStoreUnderTest['kind'],
  open: () => Promise<ReconcileStoreUnderTest>,
): void {
  describe(`reconciliation retirement-missing on ${kind}`, () => {
    let store: ReconcileStoreUnderTest;
    let books: Books;
    beforeEach(async () => {
      store = await open();
      books = new Books(store);
    });
    afterEach(async () => {
      await store.close();
    });

    /** Issuance `id` held with `units`, 100 t tokenized on it (on its first unit, if any). */
    const tokenized = async (id: string, units: readonly string[] = []) => {
      await books.issuance(id, 1000);
      await books.custodyRead('issuances', id);
      for (const unit of units) await books.custodyRead('units', unit, id);
      const on = units[0] === undefined ? { issuanceId: id } : { issuanceId: id, unitId: units[0] };
      await books.approved({ ref: `tok-${id}`, type: 'Tokenization', amount: 100, ...on }, hoursAfter(0));
    };

    it('none inside the window; a warning after it; resolved when the log shows it (kgCO2e against tonnes), reopened', async () => {
      await tokenized('I4');
      await books.approved(
        { ref: 'ret-4', type: 'Retire', issuanceId: 'I4', amount: 5000, unit: 'kgCO2e' },
        hoursAfter(0.5),
        hoursAfter(1),
      );
      const inside = await books.pass(hoursAfter(72.5));
      expect(await openFindings(books)).toEqual([]);
      expect(inside.dueAt.get('I4')).toBe(Date.parse(hoursAfter(73)));

      await books.pass(hoursAfter(73.5));
      expect(await openFindings(books)).toEqual(['retirement-missing operation ret-4']);
      const row = await rowOf(books, 'retirement-missing', 'ret-4');
      expect(row).toMatchObject({
        severity: 'warning',
        issuance_id: 'I4',
        ref: 'ret-4',
        expected_kg: 5000,
        found_kg: 0,
      });
      expect(row.detail).toContain('Retire ret-4 of 5 t on issuance I4');
      expect(row.detail).toContain(`approved ${hoursAfter(1)}`);
      expect(row.detail).toContain('after 72 h');
      expect(noticesSince(books, 0)).toEqual(['reconciliation.finding retirement-missing ret-4']);
      expect(await books.feed()).toEqual([`${row.id} finding`]);

      await books.logEntry('L4', 'I4', 5);
      let mark = books.sunk.length;
      await books.pass(hoursAfter(74));
      await expectResolved(books, row, hoursAfter(74), mark);

      // The operator's log changes that entry's status: no longer a retirement.
      await books.logEntry('L4', 'I4', 5, 'Transferred');
      mark = books.sunk.length;
      await books.pass(hoursAfter(75));
      await expectReopened(books, row, hoursAfter(75), mark);
    });

    it('each log entry matches one Retire, oldest approval first; another issuance or quantity does not match', async () => {
      await tokenized('I5');
      await books.approved(
        { ref: 'ret-late', type: 'Retire', issuanceId: 'I5', amount: 2 },
        hoursAfter(1),
        hoursAfter(3),
      );
      await books.approved(
        { ref: 'ret-early', type: 'Retire', issuanceId: 'I5', amount: 2 },
        hoursAfter(1),
        hoursAfter(2),
      );
      await books.logEntry('L5a', 'I5', 2);
      await books.logEntry('L5-other-issuance', 'I-elsewhere', 2);
      await books.logEntry('L5-other-quantity', 'I5', 2.5);
      await books.pass(hoursAfter(100));
      expect(await openFindings(books)).toEqual(['retirement-missing operation ret-late']);
      const row = await rowOf(books, 'retirement-missing', 'ret-late');

      await books.logEntry('L5b', 'I5', 2);
      const mark = books.sunk.length;
      await books.pass(hoursAfter(101));
      await expectResolved(books, row, hoursAfter(101), mark);
      expect(await openFindings(books)).toEqual([]);
    });

    it('retire_match.statuses are compared case-insensitively', async () => {
      await tokenized('I6');
      await books.approved({ ref: 'ret-6a', type: 'Retire', issuanceId: 'I6', amount: 1 }, hoursAfter(1));
      await books.approved({ ref: 'ret-6b', type: 'Retire', issuanceId: 'I6', amount: 3 }, hoursAfter(1));
      await books.logEntry('L6a', 'I6', 1, 'RETIRED');
      await books.logEntry('L6b', 'I6', 3, 'Cancelled');
      await books.pass(hoursAfter(100));
      expect(await openFindings(books)).toEqual(['retirement-missing operation ret-6b']);

      books.settings = reconcileSettings({ statuses: ['retired', 'CANCELLED'] });
      await books.pass(hoursAfter(101));
      expect(await openFindings(books)).toEqual([]);
    });

    it('retire_match.unit: the log entry of the Retire unit matches whatever its quantity; another unit does not', async () => {
      books.settings = reconcileSettings({ issuance: true, unit: true, quantity: false });
      await tokenized('I9', ['U9', 'U9b']);
      await books.approved(
        { ref: 'ret-9', type: 'Retire', issuanceId: 'I9', unitId: 'U9', amount: 3 },
        hoursAfter(1),
      );
      await books.logEntry('U9b', 'I9', 3);
      await books.pass(hoursAfter(100));
      expect(await openFindings(books)).toEqual(['retirement-missing operation ret-9']);
      const row = await rowOf(books, 'retirement-missing', 'ret-9');
      expect(row).toMatchObject({ unit_id: 'U9', issuance_id: 'I9' });

      await books.logEntry('U9', 'I9', 1);
      const mark = books.sunk.length;
      await books.pass(hoursAfter(101));
      await expectResolved(books, row, hoursAfter(101), mark);
    });
  });
}
