import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BalanceSheetView,
  type FindingView,
  type ReconciliationPage,
  TEXT_MAX,
} from '../../src/reconcile/reconciliationReads.js';
import type { ScriptStore } from '../../src/store/script.js';
import type { ApiAnswer, apiCaller } from '../helpers/http.js';
import {
  BROKEN_UNIT,
  change,
  FORMULA_ID,
  logRetirement,
  OPEN_FINDINGS,
  passAt,
  SHEET_ORDER,
  writeOperations,
} from './reconciliationBook.js';

/**
 * `GET /v1/reconciliation`, the same requests on SQLite (reconciliationRoutes.sqlite.test.ts) and
 * PostgreSQL (reconciliationRoutes.pg.test.ts): the book of reconciliationBook.ts written into the
 * store and reconciled by a full pass, then asked for its findings and balance sheets, whole,
 * filtered and page by page, and refused what it must. PostgreSQL's half (a database collated for
 * people) writes and reconciles the same book in a SQLite file beside it, whose API must answer the
 * same bytes.
 */

export const TOKEN = 'reconcile-api-token-0123456789';

type Call = ReturnType<typeof apiCaller>;
/** The page as the API answers it: the cursor is text. */
type Page = Omit<ReconciliationPage, 'next'> & { next: string | null };

/** The API on the store under test, the book written and reconciled at `now`. */
export interface ReconciliationUnderTest {
  call: Call;
  /** The stores the book is in: the store under test, and the reference's when there is one. */
  stores: ScriptStore[];
  now: number;
  /** An API on another store holding the same book, which must answer the same bytes. */
  reference?: Call;
  close(): Promise<void>;
}

const findingName = (f: FindingView) => `${f.kind} ${f.subjectId}`;
const sheetName = (s: BalanceSheetView) => `${s.subject} ${s.id}`;

function pageOf(res: ApiAnswer): Page {
  expect(res.status, res.text).toBe(200);
  return res.json as Page;
}

/** Registers the requests on the API over `store`; `open` writes the book into it and serves it. */
export function reconciliationRoutesCases(store: string, open: () => Promise<ReconciliationUnderTest>): void {
  describe(`GET /v1/reconciliation over ${store}`, () => {
    let api: ReconciliationUnderTest;
    /** Asks the store under test and, when there is one, the reference: the same status and bytes. */
    const ask = async (path: string, token?: string | null): Promise<ApiAnswer> => {
      const res = await api.call('GET', path, undefined, token);
      if (api.reference) {
        const ref = await api.reference('GET', path, undefined, token);
        expect({ status: res.status, text: res.text }).toEqual({ status: ref.status, text: ref.text });
      }
      return res;
    };
    /** Every page from `path` on (limit in it), following `next`. */
    const allPages = async (path: string): Promise<Page[]> => {
      const pages: Page[] = [];
      let next: string | null = null;
      do {
        const sep = path.includes('?') ? '&' : '?';
        const page = pageOf(
          await ask(next === null ? path : `${path}${sep}cursor=${encodeURIComponent(next)}`),
        );
        pages.push(page);
        next = page.next;
        expect(pages.length).toBeLessThan(50);
      } while (next !== null);
      return pages;
    };

    beforeAll(async () => {
      api = await open();
    });
    afterAll(async () => {
      await api?.close();
    });

    it('lists the open findings in the order first found, each with its figures, and the counts by severity', async () => {
      const page = pageOf(await ask('/v1/reconciliation'));
      expect(page.findings.map(findingName).sort()).toEqual(OPEN_FINDINGS);
      const ids = page.findings.map((f) => f.id);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect(page.counts).toEqual({ critical: 2, warning: 5, info: 1 });
      expect(page.next).toBeNull();
      const seen = new Date(api.now).toISOString();
      const over = page.findings.find((f) => f.kind === 'over-issuance');
      expect(over).toEqual({
        id: expect.any(Number),
        kind: 'over-issuance',
        severity: 'critical',
        subject: 'issuance',
        subjectId: 'ISS-B',
        issuanceId: 'ISS-B',
        unitId: null,
        ref: 'op-b1',
        expectedKg: 20_000,
        foundKg: 30_000,
        detail: 'issuance ISS-B: 30 t tokenized, beyond its amount of 20 t',
        firstSeenAt: seen,
        lastSeenAt: seen,
        resolvedAt: null,
      });
      expect(page.findings.find((f) => f.kind === 'outstanding-negative')).toMatchObject({
        subjectId: 'ISS-C',
        expectedKg: 0,
        foundKg: -3000,
      });
      expect(page.findings.find((f) => f.kind === 'retirement-missing')).toMatchObject({
        subject: 'operation',
        issuanceId: 'ISS-E',
        ref: 'op-e2',
        expectedKg: 2000,
        foundKg: 0,
      });
      expect(page.findings.find((f) => f.unitId === BROKEN_UNIT)).toMatchObject({
        subject: 'unit',
        issuanceId: FORMULA_ID,
      });
    });

    it("shows each issuance's balance sheet beside what the operator shows, then its units', in byte order", async () => {
      const page = pageOf(await ask('/v1/reconciliation'));
      expect(page.balances.map(sheetName)).toEqual(SHEET_ORDER);
      const a = page.balances.find((s) => s.id === 'ISS-A');
      expect(a).toEqual({
        subject: 'issuance',
        id: 'ISS-A',
        issuanceId: 'ISS-A',
        balance: {
          tokenizedKg: 50_000,
          transferredKg: 0,
          retiredKg: 10_000,
          detokenizedKg: 0,
          outstandingKg: 40_000,
          fractionKg: 0,
          approved: 4,
          awaiting: 0,
          unreadable: 0,
          lastRef: 'op-a4',
        },
        issuanceAmountKg: 100_000,
        custody: { state: 'held', endedAt: null },
        log: { operations: 1, retiredKg: 10_000 },
      });
      expect(page.balances.find((s) => s.id === 'U-A1')).toMatchObject({
        subject: 'unit',
        issuanceId: 'ISS-A',
        balance: { tokenizedKg: 20_000, retiredKg: 10_000, outstandingKg: 10_000 },
        issuanceAmountKg: null,
        custody: { state: 'held' },
        log: null,
      });
      expect(page.balances.find((s) => s.id === 'ISS-D')?.custody).toEqual({ state: 'never', endedAt: null });
      expect(page.balances.find((s) => s.id === 'ISS-F')?.balance).toMatchObject({
        approved: 0,
        awaiting: 1,
      });
    });

    it('filters findings by kind, severity and issuance; an issuance also narrows the sheets and the counts', async () => {
      const critical = pageOf(await ask('/v1/reconciliation?severity=critical'));
      expect(critical.findings.map(findingName).sort()).toEqual([
        'outstanding-negative ISS-C',
        'over-issuance ISS-B',
      ]);
      expect(critical.counts).toEqual({ critical: 2, warning: 5, info: 1 });
      const custody = pageOf(await ask('/v1/reconciliation?kind=not-in-custody'));
      expect(custody.findings.map((f) => f.subjectId).sort()).toEqual(
        [FORMULA_ID, 'ISS-D', BROKEN_UNIT].sort(),
      );
      expect(pageOf(await ask('/v1/reconciliation?kind=not-in-custody&severity=info')).findings).toEqual([]);

      const one = pageOf(await ask('/v1/reconciliation?issuance=ISS-A'));
      expect(one.findings).toEqual([]);
      expect(one.balances.map(sheetName)).toEqual(['issuance ISS-A', 'unit U-A1', 'unit U-A2', 'unit U-A3']);
      expect(one.counts).toEqual({ critical: 0, warning: 0, info: 0 });
      const c = pageOf(await ask('/v1/reconciliation?issuance=ISS-C'));
      expect(c.findings.map(findingName)).toEqual(['outstanding-negative ISS-C']);
      expect(c.counts).toEqual({ critical: 1, warning: 0, info: 0 });
      // An issuance no operation names: its sheet shows what the operator holds of it.
      const g = pageOf(await ask('/v1/reconciliation?issuance=ISS-G'));
      expect(g.findings.map(findingName)).toEqual(['deposit-not-tokenized ISS-G']);
      expect(g.balances).toEqual([
        expect.objectContaining({
          id: 'ISS-G',
          balance: expect.objectContaining({ tokenizedKg: 0, approved: 0 }),
          issuanceAmountKg: 100_000,
          custody: { state: 'held', endedAt: null },
        }),
      ]);
    });

    it('pages findings and sheets with one cursor: every row once, none lost, the order kept', async () => {
      const whole = pageOf(await ask('/v1/reconciliation?state=all'));
      for (const limit of [1, 2, 3, 7]) {
        const pages = await allPages(`/v1/reconciliation?state=all&limit=${limit}`);
        for (const p of pages) {
          expect(p.findings.length).toBeLessThanOrEqual(limit);
          expect(p.balances.length).toBeLessThanOrEqual(limit);
          expect(p.counts).toEqual(whole.counts);
        }
        expect(pages.flatMap((p) => p.findings)).toEqual(whole.findings);
        expect(pages.flatMap((p) => p.balances)).toEqual(whole.balances);
        // The last page is the one where neither list has more.
        expect(pages).toHaveLength(Math.ceil(Math.max(whole.findings.length, whole.balances.length) / limit));
      }
      // ISS-A's four sheets split over pages of two: the unit after the page's last is next.
      const one = await allPages('/v1/reconciliation?issuance=ISS-A&limit=3');
      expect(one.map((p) => p.balances.map(sheetName))).toEqual([
        ['issuance ISS-A', 'unit U-A1', 'unit U-A2'],
        ['unit U-A3'],
      ]);
    });

    it.each([
      [
        'an unknown kind',
        '/v1/reconciliation?kind=double-count',
        /^kind: expected one of outstanding-negative, over-issuance, not-in-custody, retirement-missing, decision-overdue, deposit-not-tokenized$/,
      ],
      [
        'an unknown severity',
        '/v1/reconciliation?severity=high',
        /^severity: expected one of critical, warning, info$/,
      ],
      ['an unknown state', '/v1/reconciliation?state=closed', /^state: expected one of open, resolved, all$/],
      ['a blank issuance', '/v1/reconciliation?issuance=%20', /^issuance: expected an issuance id/],
      ['an issuance too long to be one', `/v1/reconciliation?issuance=${'9'.repeat(201)}`, /^issuance: /],
      ['limit 0', '/v1/reconciliation?limit=0', /^limit: /],
      ['limit over 1000', '/v1/reconciliation?limit=1001', /^limit: /],
      [
        'a cursor it never gave out',
        '/v1/reconciliation?cursor=eyJmIjowLCJpIjoiIiwidSI6IiJ9.AAAA',
        /^cursor: not a cursor this API gave out$/,
      ],
      ['an unknown parameter', '/v1/reconciliation?kinds=over-issuance', /^unknown parameter kinds$/],
    ])('%s is refused with 400 naming it', async (_what, path, message) => {
      const res = await ask(path);
      expect(res.status).toBe(400);
      expect(res.json.error).toMatch(message);
    });

    it('answers 401 without the token or with a wrong one', async () => {
      for (const token of [null, 'wrong-token-0123456789']) {
        const res = await ask('/v1/reconciliation', token);
        expect(res.status).toBe(401);
        expect(res.json.findings).toBeUndefined();
      }
    });

    it('a finding resolved by a later pass leaves the open list and shows under state=resolved, then all', async () => {
      const later = api.now + 3_600_000;
      for (const store of api.stores) {
        await change(store, logRetirement('LOG-E2', 'ISS-E', 2, later));
        const outcome = await passAt(store, later);
        expect(outcome.resolved.map((n) => n.finding.kind)).toEqual(['retirement-missing']);
      }
      const open = pageOf(await ask('/v1/reconciliation'));
      expect(open.findings.map(findingName)).not.toContain('retirement-missing op-e2');
      expect(open.counts).toEqual({ critical: 2, warning: 4, info: 1 });
      const resolved = pageOf(await ask('/v1/reconciliation?state=resolved'));
      expect(resolved.findings).toEqual([
        expect.objectContaining({
          kind: 'retirement-missing',
          subjectId: 'op-e2',
          resolvedAt: new Date(later).toISOString(),
          firstSeenAt: new Date(api.now).toISOString(),
        }),
      ]);
      const all = pageOf(await ask('/v1/reconciliation?state=all'));
      expect(all.findings).toHaveLength(OPEN_FINDINGS.length);
      expect(all.balances.find((s) => s.id === 'ISS-E')?.log).toEqual({ operations: 1, retiredKg: 2000 });
    });
    it('ids longer than an answer carries are clipped, and the pages still start where the last one ended', async () => {
      const long = `L${'o'.repeat(TEXT_MAX + 100)}`;
      const units = ['1', '2', '3'].map((n) => `${long}-unit-${n}`);
      const later = api.now + 2 * 3_600_000;
      for (const store of api.stores) {
        await writeOperations(
          store,
          units.map((unit, i) => ({
            ref: `op-long-${i}`,
            type: 'Tokenization',
            issuance: long,
            unit,
            tonnes: 1,
            state: 'approved',
            hoursAgo: 10,
          })),
          later,
        );
        await passAt(store, later);
      }
      const whole = pageOf(await ask('/v1/reconciliation?state=all'));
      const clipped = whole.balances.filter((s) => s.id.endsWith('…'));
      expect(clipped.map((s) => s.subject)).toEqual(['issuance', 'unit', 'unit', 'unit']);
      for (const s of clipped) expect(s.id).toHaveLength(TEXT_MAX);
      for (const limit of [1, 2]) {
        const pages = await allPages(`/v1/reconciliation?state=all&limit=${limit}`);
        expect(pages.flatMap((p) => p.balances)).toEqual(whole.balances);
        expect(pages.flatMap((p) => p.findings)).toEqual(whole.findings);
      }
    });
  });
}
