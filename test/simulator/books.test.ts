/**
 * The simulator keeps books (issue 29): an approved report changes custody and the public units log
 * the way an operator's registry would, once per ref; its faults make the books disagree on purpose.
 * Everything goes through the real HTTP interface over loopback, as the daemon would see it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/common/clock.js';
import { type BooksView, planBooking, type Simulator, startSimulator } from '../../src/simulator/index.js';
import { get, getArray, post } from './helpers.js';

const NOTIFY = '/integration/v1/notify';
/** Outside the default custody set (first 5 issuances, first 10 units). */
const FREE_ISSUANCE = 100_200;
const FREE_UNIT = 1_000_000_040;

const report = (ref: string, operationType: string, extra: Record<string, unknown> = {}) => ({
  marketplaceId: 'mkt-books',
  operationType,
  unitId: 1_000_000_004,
  issuanceId: 100_004,
  transactionAmount: 2,
  transactionUnit: 'tCO2e',
  marketplaceTransactionRef: ref,
  ...extra,
});

let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function start(): Promise<Simulator> {
  sim = await startSimulator({ clock: new ManualClock(Date.parse('2026-03-04T10:00:00.000Z')) });
  return sim;
}

async function notify(s: Simulator, body: Record<string, unknown>): Promise<void> {
  const r = await post(s, NOTIFY, body);
  expect(r.status, r.text).toBe(202);
}

/** The units log from `offset` on, as GET /integration/v1/units serves it. */
const logFrom = (s: Simulator, offset: number) =>
  getArray(s, `/integration/v1/units?offset=${offset}&limit=1000`);

const books = async (s: Simulator) => (await get(s, '/_sim/books')).body as BooksView;

describe('the simulator keeps books of approved reports', () => {
  it('an approved Retire in kgCO2e ends the units log with its retirement in tCO2e, once per ref', async () => {
    const s = await start();
    const before = s.registry.count('units');
    const lastId = String((await logFrom(s, before - 1))[0]?.unitsOperationID);
    const retire = report('retire-1', 'Retire', {
      transactionAmount: 1500,
      transactionUnit: 'kgCO2e',
      unitsRetirementNotes: 'on behalf of a customer',
      unitsInternalAccountID: 77,
    });
    await notify(s, retire);

    const appended = await logFrom(s, before);
    expect(appended).toHaveLength(1);
    const entry = appended[0] ?? {};
    expect(entry).toMatchObject({
      unitsIssuanceID: '100004',
      unitsQuantity: 1.5,
      unitsStatus: 'Retired',
      unitsDate: '2026-03-04',
      unitsRetirementNotes: 'on behalf of a customer',
      unitsAccountOriginID: 77,
      unitsMarketplaceID: 'mkt-books',
    });
    // Above every earlier id, numerically and as text, and plausible in the fields not reported.
    expect(Number(entry.unitsOperationID)).toBeGreaterThan(Number(lastId));
    expect(String(entry.unitsOperationID) > lastId).toBe(true);
    expect(typeof entry.unitsBlockchainNetwork).toBe('string');
    expect(Number.isInteger(entry.unitsAccountDestinationID)).toBe(true);

    // At-least-once delivery: the same ref reported again changes nothing more.
    await notify(s, retire);
    expect(await logFrom(s, before)).toHaveLength(1);
    expect(s.registry.count('units')).toBe(before + 1);
    const view = await books(s);
    expect(view.booked.retire).toBe(1);
    expect(view.appended).toEqual([entry.unitsOperationID]);
  });

  it('books at decision time: no webhook receiver is needed for the log to change', async () => {
    const s = await start();
    expect(s.webhooks.config.url).toBeUndefined();
    const before = s.registry.count('units');
    await notify(s, report('retire-unsent', 'retire'));
    expect(s.webhooksSent).toHaveLength(0);
    expect(await logFrom(s, before)).toHaveLength(1);
  });

  it('a rejected Retire, a silent one and an approved Transfer append nothing', async () => {
    const s = await start();
    const before = s.registry.count('units');
    await notify(s, report('reject-retire', 'Retire'));
    await notify(s, report('silent-retire', 'Retire'));
    await notify(s, report('transfer-1', 'Transfer'));
    await notify(s, report('transfer-2', 'postTransfer'));
    expect(await logFrom(s, before)).toEqual([]);
    const view = await books(s);
    expect(view.booked).toEqual({ tokenization: 0, transfer: 2, retire: 0, detokenization: 0 });
    expect(view.appendedTotal).toBe(0);
  });

  it('an approved Detokenization logs the whole tonnes as Held, to the reported account, custody unchanged', async () => {
    const s = await start();
    const before = s.registry.count('units');
    const custodyBefore = (await get(s, '/_sim/custody')).body;
    await notify(
      s,
      report('detok-1', 'Detokenization', { transactionAmount: 3, unitsAccountDestinationID: 4242 }),
    );
    const appended = await logFrom(s, before);
    expect(appended).toHaveLength(1);
    expect(appended[0]).toMatchObject({
      unitsIssuanceID: '100004',
      unitsStatus: 'Held',
      unitsQuantity: 3,
      unitsAccountDestinationID: 4242,
      unitsDate: '2026-03-04',
      unitsRetirementNotes: '',
    });
    expect((await get(s, '/_sim/custody')).body).toEqual(custodyBefore);
  });

  it('the legacy spelling postRetirement is accepted and booked as a retirement', async () => {
    const s = await start();
    const before = s.registry.count('units');
    await notify(s, report('legacy-retire', 'postRetirement', { transactionAmount: 4 }));
    expect(await logFrom(s, before)).toMatchObject([{ unitsStatus: 'Retired', unitsQuantity: 4 }]);
  });

  it('an approved Tokenization puts its issuance and unit in custody: their custody reads answer 200', async () => {
    const s = await start();
    const issuanceRead = `/integration/v1/issuances/${FREE_ISSUANCE}`;
    const unitRead = `/integration/v1/units/${FREE_UNIT}`;
    expect((await get(s, issuanceRead)).status).toBe(404);
    expect((await get(s, unitRead)).status).toBe(404);
    const unitsBefore = s.registry.count('units');

    await notify(s, report('tok-1', 'Tokenization', { issuanceId: FREE_ISSUANCE, unitId: FREE_UNIT }));
    const issuance = await get(s, issuanceRead);
    expect(issuance.status).toBe(200);
    expect(issuance.body).toMatchObject({ issuanceId: String(FREE_ISSUANCE) });
    const unit = await get(s, unitRead);
    expect(unit.status).toBe(200);
    expect(unit.body).toMatchObject({ unitsOperationID: String(FREE_UNIT) });
    expect(s.registry.count('units')).toBe(unitsBefore);

    // A rejected tokenization deposits nothing.
    await notify(s, report('reject-tok', 'Tokenization', { issuanceId: FREE_ISSUANCE + 4 }));
    expect((await get(s, `/integration/v1/issuances/${FREE_ISSUANCE + 4}`)).status).toBe(404);
  });
});

describe('faults of the books', () => {
  it('loseRetirements(1): the next approved retirement is not logged, the one after is', async () => {
    const s = await start();
    const before = s.registry.count('units');
    s.books.loseRetirements(1);
    expect((await books(s)).pending.loseRetirements).toBe(1);
    // A rejected one and a transfer do not use the fault up.
    await notify(s, report('reject-r0', 'Retire'));
    await notify(s, report('t0', 'Transfer'));
    await notify(s, report('r1', 'Retire', { transactionAmount: 5 }));
    expect(await logFrom(s, before)).toEqual([]);
    await notify(s, report('r2', 'Retire', { transactionAmount: 6 }));
    expect(await logFrom(s, before)).toMatchObject([{ unitsStatus: 'Retired', unitsQuantity: 6 }]);

    const view = await books(s);
    expect(view.lost).toEqual(['r1']);
    expect(view.pending.loseRetirements).toBe(0);
    expect(view.booked.retire).toBe(2);
  });

  it('POST /_sim/books loseRetirements adds to the pending count', async () => {
    const s = await start();
    const before = s.registry.count('units');
    expect((await post(s, '/_sim/books', { loseRetirements: 1 })).status).toBe(200);
    const r = await post(s, '/_sim/books', { loseRetirements: 1 });
    expect((r.body as BooksView).pending.loseRetirements).toBe(2);
    for (const ref of ['a', 'b', 'c']) await notify(s, report(ref, 'Retire'));
    expect(await logFrom(s, before)).toHaveLength(1);
    expect((await books(s)).lost).toEqual(['a', 'b']);
  });

  it('dropCustody: the dropped ids answer 404 on their custody reads from then on', async () => {
    const s = await start();
    const issuanceRead = '/integration/v1/issuances/100000';
    const unitRead = '/integration/v1/units/1000000000';
    expect((await get(s, issuanceRead)).status).toBe(200);
    expect((await get(s, unitRead)).status).toBe(200);

    const r = await post(s, '/_sim/books', {
      dropCustody: { issuances: ['100000'], units: [1_000_000_000] },
    });
    expect(r.status, r.text).toBe(200);
    expect((await get(s, issuanceRead)).status).toBe(404);
    expect((await get(s, unitRead)).status).toBe(404);
    // Only those: the rest of custody still answers.
    expect((await get(s, '/integration/v1/issuances/100004')).status).toBe(200);
    const custody = (await get(s, '/_sim/custody')).body as { issuances: string[]; units: string[] };
    expect(custody.issuances).not.toContain('100000');
    expect(custody.units).not.toContain('1000000000');

    // In-process, the same.
    s.books.dropCustody({ issuances: [100_004] });
    expect((await get(s, '/integration/v1/issuances/100004')).status).toBe(404);
  });

  it('keepBooks: false leaves the registry as it is, true books again', async () => {
    const s = await start();
    const before = s.registry.count('units');
    expect(((await post(s, '/_sim/books', { keepBooks: false })).body as BooksView).keepBooks).toBe(false);
    await notify(s, report('off-retire', 'Retire'));
    await notify(s, report('off-tok', 'Tokenization', { issuanceId: FREE_ISSUANCE }));
    expect(await logFrom(s, before)).toEqual([]);
    expect((await get(s, `/integration/v1/issuances/${FREE_ISSUANCE}`)).status).toBe(404);

    await post(s, '/_sim/books', { keepBooks: true });
    await notify(s, report('on-retire', 'Retire'));
    expect(await logFrom(s, before)).toHaveLength(1);
    expect((await books(s)).booked.retire).toBe(1);
  });

  it('POST /_sim/books with bad input answers 400 naming the field, and changes nothing', async () => {
    const s = await start();
    const cases: [unknown, string][] = [
      [{ loseRetirements: 'two' }, 'loseRetirements'],
      [{ loseRetirements: -1 }, 'loseRetirements'],
      [{ keepBooks: 'no' }, 'keepBooks'],
      [{ dropCustody: { units: ['abc'] } }, 'dropCustody.units'],
      [{ dropCustody: { projects: [1000] } }, 'projects'],
      [{ loseRetirement: 1 }, 'loseRetirement'],
    ];
    for (const [body, field] of cases) {
      const r = await post(s, '/_sim/books', body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect((r.body as { message: string }).message, JSON.stringify(body)).toContain(field);
    }
    expect((await post(s, '/_sim/books', '{not json')).status).toBe(400);
    const view = await books(s);
    expect(view.pending.loseRetirements).toBe(0);
    expect(view.keepBooks).toBe(true);
    expect((await get(s, '/integration/v1/units/1000000000')).status).toBe(200);
  });
});

describe('planBooking (the pure decision)', () => {
  it('reads kgCO2e in any case, floors a detokenization to whole tonnes, and skips what it cannot place', () => {
    const day = '2026-01-02';
    expect(
      planBooking(report('x', 'RETIRE', { transactionAmount: 250, transactionUnit: 'KGCO2E' }), day),
    ).toMatchObject({ action: 'log', kind: 'retire', fields: { unitsQuantity: 0.25, unitsDate: day } });
    expect(
      planBooking(report('x', 'detokenization', { transactionAmount: 2500, transactionUnit: 'kgco2e' }), day),
    ).toMatchObject({ action: 'log', fields: { unitsStatus: 'Held', unitsQuantity: 2 } });
    expect(planBooking(report('x', 'Retire', { issuanceId: undefined }), day)).toMatchObject({
      action: 'nothing',
      kind: 'retire',
    });
    // A negative id names no record: nothing enters custody for it.
    expect(planBooking(report('x', 'Tokenization', { issuanceId: -4, unitId: 8 }), day)).toEqual({
      action: 'custody',
      kind: 'tokenization',
      issuances: [],
      units: [8],
    });
    expect(planBooking(report('x', 'Retire', { unitsInternalAccountID: 'acct-9' }), day)).not.toMatchObject({
      fields: { unitsAccountOriginID: 'acct-9' },
    });
  });
});
