import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ledgerEntryOf } from '../../src/outbox/ledgerEntry.js';
import { prepareInsert } from '../../src/outbox/prepareInsert.js';
import { catchUpLedger } from '../../src/reconcile/pass.js';
import { ledgerMark } from '../../src/reconcile/reconcileStatements.js';
import { run } from '../../src/store/script.js';
import { raw, sql } from '../../src/store/sql.js';
import { detokenization, retire, tokenization } from '../outbox/fixtures.js';
import { Books, type FindingRead, hoursAfter, type ReconcileStoreUnderTest } from './reconcileStores.js';

/**
 * The reconciliation on both stores (reconciliation.sqlite.test.ts, reconciliation.pg.test.ts): for
 * each kind of finding, the books that raise it, the row, its feed row and its notice; then the
 * condition gone (resolved, with its notice and feed row) and back (the same row reopened). The
 * retirement matching has its own cases (reconciliationRetire.cases.ts).
 */

/** The one row of `kind` about `subjectId`. */
export async function rowOf(books: Books, kind: string, subjectId: string): Promise<FindingRead> {
  const rows = (await books.findings()).filter((r) => r.kind === kind && r.subject_id === subjectId);
  expect(rows, `${kind} ${subjectId}`).toHaveLength(1);
  return rows[0] as FindingRead;
}

/** The open findings as `kind subject subject_id`, sorted. */
export async function openFindings(books: Books): Promise<string[]> {
  return (await books.findings())
    .filter((r) => r.resolved_at === null)
    .map((r) => `${r.kind} ${r.subject} ${r.subject_id}`)
    .sort();
}

/** The notices the sink got since `from`, as `event kind subjectId`. */
export const noticesSince = (books: Books, from: number) =>
  books.sunk.slice(from).map((n) => `${n.event} ${n.finding.kind} ${n.finding.subjectId}`);

/** Asserts `row` was resolved at `at` by a pass that raised its notice and feed row. */
export async function expectResolved(books: Books, row: FindingRead, at: string, noticeFrom: number) {
  const now = await rowOf(books, row.kind, row.subject_id);
  expect(now).toMatchObject({ id: row.id, resolved_at: at, first_seen_at: row.first_seen_at });
  expect(noticesSince(books, noticeFrom)).toContain(`reconciliation.resolved ${row.kind} ${row.subject_id}`);
  expect((await books.feed()).at(-1)).toBe(`${row.id} resolved`);
}

/** Asserts `row` is open again, the same row (id, first seen), with a new `finding` notice and feed row. */
export async function expectReopened(books: Books, row: FindingRead, at: string, noticeFrom: number) {
  const now = await rowOf(books, row.kind, row.subject_id);
  expect(now).toMatchObject({
    id: row.id,
    resolved_at: null,
    first_seen_at: row.first_seen_at,
    last_seen_at: at,
  });
  expect(noticesSince(books, noticeFrom)).toContain(`reconciliation.finding ${row.kind} ${row.subject_id}`);
  expect((await books.feed()).filter((f) => f === `${row.id} finding`)).toHaveLength(2);
}

const held = async (books: Books, issuanceId: string, amountT: number, units: readonly string[] = []) => {
  await books.issuance(issuanceId, amountT);
  await books.custodyRead('issuances', issuanceId);
  for (const unit of units) await books.custodyRead('units', unit, issuanceId);
};

export function reconciliationCases(
  kind: ReconcileStoreUnderTest['kind'],
  open: () => Promise<ReconcileStoreUnderTest>,
): void {
  describe(`reconciliation findings on ${kind}`, () => {
    let store: ReconcileStoreUnderTest;
    let books: Books;
    beforeEach(async () => {
      store = await open();
      books = new Books(store);
    });
    afterEach(async () => {
      await store.close();
    });

    it('outstanding-negative on the issuance and the unit: critical, resolved when tokenized, reopened', async () => {
      await held(books, 'I1', 100, ['U1']);
      const on = { issuanceId: 'I1', unitId: 'U1', unit: 'tCO2e' };
      await books.approved({ ref: 'tok-1', type: 'Tokenization', amount: 10, ...on }, hoursAfter(1));
      await books.approved({ ref: 'ret-1', type: 'Retire', amount: 12, ...on }, hoursAfter(1));
      await books.logEntry('L1', 'I1', 12);
      const first = await books.pass(hoursAfter(2));
      expect(await openFindings(books)).toEqual([
        'outstanding-negative issuance I1',
        'outstanding-negative unit U1',
      ]);
      const issuance = await rowOf(books, 'outstanding-negative', 'I1');
      expect(issuance).toMatchObject({
        subject: 'issuance',
        issuance_id: 'I1',
        unit_id: null,
        ref: 'ret-1',
        severity: 'critical',
        expected_kg: 0,
        found_kg: -2000,
        first_seen_at: hoursAfter(2),
        resolved_at: null,
      });
      expect(issuance.detail).toContain('retired 12 t');
      expect(issuance.detail).toContain('10 t tokenized');
      expect(issuance.detail).toContain('outstanding -2 t');
      const unit = await rowOf(books, 'outstanding-negative', 'U1');
      expect(unit).toMatchObject({ subject: 'unit', issuance_id: 'I1', unit_id: 'U1', found_kg: -2000 });
      expect([first.open, first.operations, first.sheets]).toEqual([2, 2, 2]);
      expect(first.opened.map((n) => [n.id, n.event])).toEqual([
        [issuance.id, 'reconciliation.finding'],
        [unit.id, 'reconciliation.finding'],
      ]);
      expect(noticesSince(books, 0)).toEqual([
        'reconciliation.finding outstanding-negative I1',
        'reconciliation.finding outstanding-negative U1',
      ]);
      expect(await books.feed()).toEqual([`${issuance.id} finding`, `${unit.id} finding`]);

      // Seen again unchanged: no notice, no feed row, last seen moves.
      const again = await books.pass(hoursAfter(3));
      expect([again.opened, again.resolved]).toEqual([[], []]);
      expect(await rowOf(books, 'outstanding-negative', 'I1')).toMatchObject({ last_seen_at: hoursAfter(3) });
      expect(await books.feed()).toHaveLength(2);

      await books.approved({ ref: 'tok-2', type: 'Tokenization', amount: 5, ...on }, hoursAfter(4));
      let mark = books.sunk.length;
      const fixed = await books.pass(hoursAfter(5));
      expect(fixed.resolved.map((n) => n.id).sort()).toEqual([issuance.id, unit.id].sort());
      expect(fixed.open).toBe(0);
      expect(await openFindings(books)).toEqual([]);
      await expectResolved(books, unit, hoursAfter(5), mark);
      expect((await rowOf(books, 'outstanding-negative', 'I1')).resolved_at).toBe(hoursAfter(5));

      await books.approved({ ref: 'ret-2', type: 'Retire', amount: 4, ...on }, hoursAfter(6));
      await books.logEntry('L2', 'I1', 4);
      mark = books.sunk.length;
      await books.pass(hoursAfter(7));
      await expectReopened(books, issuance, hoursAfter(7), mark);
      expect(await rowOf(books, 'outstanding-negative', 'I1')).toMatchObject({
        found_kg: -1000,
        ref: 'ret-2',
      });
    });

    it('over-issuance: critical; awaiting operations not counted; resolved when the amount is raised, reopened', async () => {
      await held(books, 'I2', 10);
      await books.approved(
        { ref: 'tok-t', type: 'Tokenization', issuanceId: 'I2', amount: 8 },
        hoursAfter(1),
      );
      await books.approved(
        { ref: 'tok-kg', type: 'Tokenization', issuanceId: 'I2', amount: 4000, unit: 'kgCO2e' },
        hoursAfter(1),
      );
      // Reported and not decided: not tokenized yet.
      await books.report(
        { ref: 'tok-queued', type: 'Tokenization', issuanceId: 'I2', amount: 100 },
        hoursAfter(1),
      );
      await books.pass(hoursAfter(2));
      expect(await openFindings(books)).toEqual(['over-issuance issuance I2']);
      const row = await rowOf(books, 'over-issuance', 'I2');
      expect(row).toMatchObject({
        severity: 'critical',
        expected_kg: 10_000,
        found_kg: 12_000,
        ref: 'tok-queued',
      });
      expect(row.detail).toContain('12 t tokenized');
      expect(row.detail).toContain('amount of 10 t');
      expect(noticesSince(books, 0)).toEqual(['reconciliation.finding over-issuance I2']);
      expect(await books.feed()).toEqual([`${row.id} finding`]);

      await books.issuance('I2', 15);
      let mark = books.sunk.length;
      await books.pass(hoursAfter(3));
      await expectResolved(books, row, hoursAfter(3), mark);

      await books.approved(
        { ref: 'tok-more', type: 'Tokenization', issuanceId: 'I2', amount: 5 },
        hoursAfter(4),
      );
      mark = books.sunk.length;
      await books.pass(hoursAfter(5));
      await expectReopened(books, row, hoursAfter(5), mark);
      expect(await rowOf(books, 'over-issuance', 'I2')).toMatchObject({
        expected_kg: 15_000,
        found_kg: 17_000,
      });
    });

    it('not-in-custody, never in custody: warning; resolved once custody is read; reopened when it ends', async () => {
      await books.issuance('I3', 100);
      await books.approved({ ref: 'tr-1', type: 'Transfer', issuanceId: 'I3', amount: 1 }, hoursAfter(1));
      // A rejected operation concerns nobody.
      await books.report({ ref: 'tr-no', type: 'Transfer', issuanceId: 'I4', amount: 1 }, hoursAfter(1));
      await books.acceptAll(hoursAfter(1));
      await books.decide('tr-no', 'rejected', hoursAfter(1));
      await books.pass(hoursAfter(2));
      expect(await openFindings(books)).toEqual(['not-in-custody issuance I3']);
      const row = await rowOf(books, 'not-in-custody', 'I3');
      expect(row).toMatchObject({ severity: 'warning', ref: 'tr-1', expected_kg: null, found_kg: null });
      expect(row.detail).toContain('1 operation(s) reported on issuance I3');
      expect(row.detail).toContain('does not show in custody');
      expect(noticesSince(books, 0)).toEqual(['reconciliation.finding not-in-custody I3']);

      await books.custodyRead('issuances', 'I3');
      let mark = books.sunk.length;
      await books.pass(hoursAfter(3));
      await expectResolved(books, row, hoursAfter(3), mark);

      // Custody ends; an operation before the end is fine, one after it is not.
      await books.custodyEnded('issuances', 'I3', hoursAfter(4));
      await books.pass(hoursAfter(5));
      expect(await openFindings(books)).toEqual([]);
      await books.report({ ref: 'tr-2', type: 'Transfer', issuanceId: 'I3', amount: 1 }, hoursAfter(6));
      mark = books.sunk.length;
      await books.pass(hoursAfter(7));
      await expectReopened(books, row, hoursAfter(7), mark);
      const reopened = await rowOf(books, 'not-in-custody', 'I3');
      expect(reopened.ref).toBe('tr-2');
      expect(reopened.detail).toContain(`after its custody ended (${hoursAfter(4)})`);
    });

    it('not-in-custody: a named id not read yet is awaiting (no finding); once it ended, later operations are', async () => {
      await books.named('issuances', 'I5', 'config', hoursAfter(0));
      await books.named('units', 'U5', 'outbox', hoursAfter(0));
      const on = { issuanceId: 'I5', unitId: 'U5' };
      await books.approved({ ref: 'tok-5', type: 'Tokenization', amount: 3, ...on }, hoursAfter(1));
      await books.pass(hoursAfter(2));
      expect(await openFindings(books)).toEqual([]);
      await books.approved({ ref: 'detok-5', type: 'Detokenization', amount: 3, ...on }, hoursAfter(2));

      // Ended with nothing outstanding: the operations before the end are fine.
      await books.namedEnded('units', 'U5', hoursAfter(3));
      await books.pass(hoursAfter(3));
      expect(await openFindings(books)).toEqual([]);
      await books.report({ ref: 'tr-5', type: 'Transfer', amount: 1, ...on }, hoursAfter(4));
      await books.pass(hoursAfter(5));
      expect(await openFindings(books)).toEqual(['not-in-custody unit U5']);
      const row = await rowOf(books, 'not-in-custody', 'U5');
      expect(row).toMatchObject({ subject: 'unit', unit_id: 'U5', issuance_id: 'I5', ref: 'tr-5' });
      expect(row.detail).toContain(`after its custody ended (${hoursAfter(3)})`);

      // Cancelled before it was sent: no longer an operation on the unit.
      await store.operations.cancel(
        { id: await books.idOf('tr-5'), ref: 'tr-5', from: 'queued' },
        hoursAfter(6),
      );
      const mark = books.sunk.length;
      await books.pass(hoursAfter(6));
      await expectResolved(books, row, hoursAfter(6), mark);
    });

    it('not-in-custody: tokens still outstanding when custody ends; resolved when custody is read back, reopened', async () => {
      await held(books, 'I3b', 100, ['U3b']);
      const on = { issuanceId: 'I3b', unitId: 'U3b' };
      await books.approved({ ref: 'tok-3b', type: 'Tokenization', amount: 2, ...on }, hoursAfter(1));
      await books.pass(hoursAfter(2));
      expect(await openFindings(books)).toEqual([]);
      await books.custodyEnded('units', 'U3b', hoursAfter(3));
      await books.pass(hoursAfter(4));
      expect(await openFindings(books)).toEqual(['not-in-custody unit U3b']);
      const row = await rowOf(books, 'not-in-custody', 'U3b');
      expect(row).toMatchObject({ severity: 'warning', ref: 'tok-3b', expected_kg: 0, found_kg: 2000 });
      expect(row.detail).toContain(
        `2 t still outstanding on unit U3b, whose custody ended (${hoursAfter(3)})`,
      );

      await books.custodyRead('units', 'U3b', 'I3b');
      let mark = books.sunk.length;
      await books.pass(hoursAfter(5));
      await expectResolved(books, row, hoursAfter(5), mark);

      await books.custodyEnded('units', 'U3b', hoursAfter(6));
      mark = books.sunk.length;
      await books.pass(hoursAfter(7));
      await expectReopened(books, row, hoursAfter(7), mark);
    });

    it('decision-overdue: none within status.decision_warn_hours, a warning after; resolved by the decision', async () => {
      await held(books, 'I6', 100);
      await books.report({ ref: 'tr-6', type: 'Transfer', issuanceId: 'I6', amount: 2.5 }, hoursAfter(1));
      await books.acceptAll(hoursAfter(1));
      const early = await books.pass(hoursAfter(24.5));
      expect(await openFindings(books)).toEqual([]);
      expect(early.dueAt.get('I6')).toBe(Date.parse(hoursAfter(25)));
      await books.pass(hoursAfter(25.5));
      expect(await openFindings(books)).toEqual(['decision-overdue operation tr-6']);
      const row = await rowOf(books, 'decision-overdue', 'tr-6');
      expect(row).toMatchObject({
        severity: 'warning',
        issuance_id: 'I6',
        ref: 'tr-6',
        expected_kg: null,
        found_kg: 2500,
      });
      expect(row.detail).toContain(`accepted by the operator ${hoursAfter(1)}`);
      expect(row.detail).toContain('24 h');
      expect(await books.feed()).toEqual([`${row.id} finding`]);

      await books.decide('tr-6', 'approved', hoursAfter(26));
      const mark = books.sunk.length;
      await books.pass(hoursAfter(26));
      await expectResolved(books, row, hoursAfter(26), mark);
    });

    it('deposit-not-tokenized: info after reconcile.tokenize_within_days; resolved by a Tokenization, reopened when it is cancelled', async () => {
      await books.deposit('issuances', 'I7', hoursAfter(1));
      const early = await books.pass(hoursAfter(1 + 7 * 24 - 1));
      expect(await openFindings(books)).toEqual([]);
      expect(early.dueAt.get('I7')).toBe(Date.parse(hoursAfter(1 + 7 * 24)));
      const late = hoursAfter(1 + 7 * 24 + 1);
      await books.pass(late);
      expect(await openFindings(books)).toEqual(['deposit-not-tokenized issuance I7']);
      const row = await rowOf(books, 'deposit-not-tokenized', 'I7');
      expect(row).toMatchObject({ severity: 'info', issuance_id: 'I7', unit_id: null, ref: null });
      expect(row.detail).toContain(`deposited into custody ${hoursAfter(1)}`);
      expect(row.detail).toContain('7 days');

      // Reported (not even decided yet): the marketplace did tokenize it.
      const id = await books.report(
        { ref: 'tok-7', type: 'Tokenization', issuanceId: 'I7', amount: 1 },
        late,
      );
      let mark = books.sunk.length;
      await books.pass(hoursAfter(200));
      await expectResolved(books, row, hoursAfter(200), mark);

      await store.operations.cancel({ id, ref: 'tok-7', from: 'queued' }, hoursAfter(201));
      mark = books.sunk.length;
      await books.pass(hoursAfter(202));
      await expectReopened(books, row, hoursAfter(202), mark);
    });

    it('a pass over some issuances resolves only theirs; a full pass the rest', async () => {
      for (const id of ['IA', 'IB']) {
        await held(books, id, 100);
        await books.approved({ ref: `ret-${id}`, type: 'Retire', issuanceId: id, amount: 1 }, hoursAfter(1));
        await books.logEntry(`L-${id}`, id, 1);
      }
      await books.pass(hoursAfter(2));
      expect(await openFindings(books)).toEqual([
        'outstanding-negative issuance IA',
        'outstanding-negative issuance IB',
      ]);
      for (const id of ['IA', 'IB'])
        await books.approved(
          { ref: `tok-${id}`, type: 'Tokenization', issuanceId: id, amount: 1 },
          hoursAfter(3),
        );
      const scoped = await books.pass(hoursAfter(4), ['IA']);
      expect(scoped.resolved.map((n) => n.finding.subjectId)).toEqual(['IA']);
      expect(await openFindings(books)).toEqual(['outstanding-negative issuance IB']);
      const full = await books.pass(hoursAfter(5));
      expect(full.resolved.map((n) => n.finding.subjectId)).toEqual(['IB']);
      expect(await openFindings(books)).toEqual([]);
    });

    it('an operation queued as the API queues it has its ledger entry from the start, the one its body gives; the catch-up reads only rows queued without one', async () => {
      const ledger = async () =>
        (
          await store.scripts.read<{
            outbox_id: number;
            kind: string;
            issuance_id: string | null;
            unit_id: string | null;
            amount_kg: number | null;
          }>(
            sql`SELECT outbox_id, kind, issuance_id, unit_id, amount_kg FROM reconciliation_ledger ORDER BY outbox_id`,
          )
        ).map((r) => ({
          outboxId: Number(r.outbox_id),
          kind: r.kind,
          issuanceId: r.issuance_id,
          unitId: r.unit_id,
          amountKg: r.amount_kg === null ? null : Number(r.amount_kg),
        }));
      const notifications = [
        tokenization('led-0', { unitId: 17, issuanceId: 9, transactionAmount: 2.5 }),
        retire('led-1', {
          operationType: 'postRetirement',
          unitId: '18',
          transactionAmount: 750,
          transactionUnit: 'kgCO2e',
        }),
        detokenization('led-2', { unitId: 19, issuanceId: '9', transactionAmount: 3 }),
      ];
      const prepared = notifications.map((n) => {
        const p = prepareInsert({ config: store.config }, n);
        if ('errors' in p) throw new Error(`invalid: ${JSON.stringify(p.errors)}`);
        return p;
      });
      const rows = await store.operations.insert(prepared, hoursAfter(1));
      // Written in the insert's transaction: what the catch-up would have read from each body.
      expect(await ledger()).toEqual(rows.map((r) => ({ outboxId: r.id, ...ledgerEntryOf(r.body) })));
      expect((await ledger()).map((e) => [e.kind, e.issuanceId, e.unitId, e.amountKg])).toEqual([
        ['tokenization', '9', '17', 2500],
        ['retire', '7', '18', 750],
        ['detokenization', '9', '19', 3000],
      ]);
      expect([...(await catchUpLedger(store.scripts, hoursAfter(1)))]).toEqual([]);
      // A repeat inserts no row and no entry.
      expect(await store.operations.insert(prepared.slice(0, 1), hoursAfter(2))).toEqual([]);
      expect(await ledger()).toHaveLength(3);
      // A row queued without its entry (an older version's) is caught up from its body.
      await books.report(
        { ref: 'old-1', type: 'Transfer', amount: 4, issuanceId: 'I10', unitId: 'U10' },
        hoursAfter(2),
      );
      expect([...(await catchUpLedger(store.scripts, hoursAfter(2)))]).toEqual(['I10']);
      expect((await ledger()).at(-1)).toMatchObject({ kind: 'transfer', issuanceId: 'I10', amountKg: 4000 });
    });

    it('a row queued without its entry (an older version) below rows queued with theirs is caught up, once; the mark then moves past them', async () => {
      await books.report(
        { ref: 'old-0', type: 'Tokenization', amount: 2, issuanceId: 'I11', unitId: 'U11' },
        hoursAfter(1),
      );
      const p = prepareInsert({ config: store.config }, tokenization('new-1', { issuanceId: 12 }));
      if ('errors' in p) throw new Error(`invalid: ${JSON.stringify(p.errors)}`);
      const [row] = await store.operations.insert([p], hoursAfter(1));
      expect([...(await catchUpLedger(store.scripts, hoursAfter(2)))]).toEqual(['I11']);
      expect(await books.ledgerAmounts()).toEqual([2000, 10_000]);
      expect([...(await catchUpLedger(store.scripts, hoursAfter(3)))]).toEqual([]);
      const mark = await store.scripts.read<{ value: string }>(ledgerMark());
      expect(mark.map((m) => Number(m.value))).toEqual([row?.id]);
    });

    it('the ledger entry is written in the transaction of its row: a refused entry queues nothing, and the enqueue goes through once it is accepted', async () => {
      const refuse: Record<ReconcileStoreUnderTest['kind'], string[]> = {
        sqlite: [
          "CREATE TRIGGER refuse_ledger BEFORE INSERT ON reconciliation_ledger BEGIN SELECT RAISE(ABORT, 'ledger refused'); END",
        ],
        postgres: [
          "CREATE FUNCTION refuse_ledger() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'ledger refused'; END $$",
          'CREATE TRIGGER refuse_ledger BEFORE INSERT ON reconciliation_ledger FOR EACH ROW EXECUTE FUNCTION refuse_ledger()',
        ],
      };
      const allow: Record<ReconcileStoreUnderTest['kind'], string[]> = {
        sqlite: ['DROP TRIGGER refuse_ledger'],
        postgres: ['DROP TRIGGER refuse_ledger ON reconciliation_ledger', 'DROP FUNCTION refuse_ledger()'],
      };
      const ddl = (statements: readonly string[]) =>
        store.scripts.transaction(
          (function* () {
            for (const text of statements) yield* run(raw(text));
          })(),
        );
      const counts = async () =>
        (
          await store.scripts.read<{ outbox: number; ledger: number; feed: number }>(
            sql`SELECT (SELECT count(*) FROM outbox) AS outbox, (SELECT count(*) FROM reconciliation_ledger) AS ledger,
                       (SELECT count(*) FROM changes WHERE resource = 'operations') AS feed`,
          )
        ).map((r) => [Number(r.outbox), Number(r.ledger), Number(r.feed)])[0];
      const p = prepareInsert({ config: store.config }, tokenization('atomic-1', { issuanceId: 5 }));
      if ('errors' in p) throw new Error(`invalid: ${JSON.stringify(p.errors)}`);
      await ddl(refuse[kind]);
      await expect(store.operations.insert([p], hoursAfter(1))).rejects.toThrow(/ledger refused/);
      expect(await counts()).toEqual([0, 0, 0]);
      await ddl(allow[kind]);
      expect(await store.operations.insert([p], hoursAfter(1))).toHaveLength(1);
      expect(await counts()).toEqual([1, 1, 1]);
    });

    it('amounts in tCO2e, kgCO2e and none are summed in kg; an unknown unit is unreadable and left out', async () => {
      await held(books, 'I8', 100);
      const on = { issuanceId: 'I8' };
      await books.approved(
        { ref: 'a-t', type: 'Tokenization', amount: 1, unit: 'tCO2e', ...on },
        hoursAfter(1),
      );
      await books.approved(
        { ref: 'a-kg', type: 'Tokenization', amount: 500, unit: 'kgCO2e', ...on },
        hoursAfter(1),
      );
      await books.approved({ ref: 'a-none', type: 'Tokenization', amount: '0.25', ...on }, hoursAfter(1));
      await books.approved(
        { ref: 'a-lb', type: 'Tokenization', amount: 9, unit: 'lb', ...on },
        hoursAfter(1),
      );
      await books.approved({ ref: 'r-8', type: 'Retire', amount: 2, ...on }, hoursAfter(1));
      await books.logEntry('L8', 'I8', 2);
      await books.pass(hoursAfter(2));
      expect(await books.ledgerAmounts()).toEqual([1000, 500, 250, null, 2000]);
      const row = await rowOf(books, 'outstanding-negative', 'I8');
      expect(row).toMatchObject({ found_kg: -250 });
      expect(row.detail).toContain('of 1.75 t tokenized');
    });
  });
}
