import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cursorKeyFor, encodeCursor } from '../../src/api/pageCursor.js';
import type { ManualClock } from '../../src/common/clock.js';
import type { AppContext } from '../../src/context.js';
import { runSync } from '../../src/mirror/syncRun.js';
import type { Simulator } from '../../src/simulator/index.js';
import { testContext } from '../helpers/context.js';
import type { ApiAnswer, apiCaller } from '../helpers/http.js';
import { noSleep } from '../mirror/harness.js';
import type { MirrorUnderTest } from './mirrorStores.js';

/**
 * The read API over the mirror, the same requests on SQLite (mirrorReads.sqlite.test.ts) and
 * PostgreSQL (mirrorReads.pg.test.ts): one simulator registry synced into the store (with its own
 * mirror sync), then an API on the store's reads, asked a table of requests: every list walked to its
 * end by cursor with small pages, filters, date ranges (date order), removed=, single records, 404s
 * and 400s. PostgreSQL's half syncs a SQLite mirror beside it and must answer the same bytes, on a
 * database collated in byte order as SQLite is (`C`) and on one collated for people (ICU `en-US`,
 * where `a` sorts before `B`), whose pages must still come in SQLite's order.
 */

export const TOKEN = 'test-api-token-0123456789';
const DAY = 86_400_000;

export type Call = ReturnType<typeof apiCaller>;

/** What a request answered, following `next` to the last page: status and exact body of each page. */
async function walk(call: Call, path: string): Promise<Array<Pick<ApiAnswer, 'status' | 'text'>>> {
  const pages: Array<Pick<ApiAnswer, 'status' | 'text'>> = [];
  let url: string | null = path;
  while (url !== null && pages.length < 500) {
    const answer = await call('GET', url);
    pages.push({ status: answer.status, text: answer.text });
    const next = answer.status === 200 ? (answer.json as { next?: string | null }).next : null;
    url = typeof next === 'string' ? `${path}${path.includes('?') ? '&' : '?'}cursor=${next}` : null;
  }
  return pages;
}

/** The records of a walk's pages, in the order served. */
const itemsOf = (pages: Array<Pick<ApiAnswer, 'text'>>) =>
  pages.flatMap((p) => (JSON.parse(p.text) as { items: Record<string, unknown>[] }).items);

/** Values the requests filter on, taken from the registry. */
export interface Facts {
  project: string;
  removedProject: string;
  country: string;
  program: string;
  issuance: string;
  issuanceProject: number;
  vintage: number;
  unit: string;
  unitIssuance: string;
  unitType: string;
  /** Two units of one day whose keys differ only in a letter's case: their order is the collation's. */
  lower: string;
  upper: string;
}

/** A request, and what it must answer on either store. */
interface Case {
  name: string;
  path: (f: Facts) => string;
  expect: (pages: Array<Pick<ApiAnswer, 'status' | 'text'>>, f: Facts) => void;
}

/** Several pages of records, every one passing `each`. */
const pagesOf =
  (least: number, each: (item: Record<string, unknown>, f: Facts) => boolean = () => true) =>
  (pages: Array<Pick<ApiAnswer, 'status' | 'text'>>, f: Facts) => {
    expect(pages.every((p) => p.status === 200)).toBe(true);
    expect(pages.length).toBeGreaterThanOrEqual(least);
    const items = itemsOf(pages);
    expect(items.length).toBeGreaterThan(0);
    expect(items.filter((item) => !each(item, f))).toEqual([]);
  };
const status =
  (code: number) =>
  (pages: Array<Pick<ApiAnswer, 'status' | 'text'>>): void => {
    expect(pages.map((p) => p.status)).toEqual([code]);
  };
const inRange = (column: string, from: string, to: string) => (item: Record<string, unknown>) =>
  String(item[column]) >= from && String(item[column]) <= to;

const CASES: Case[] = [
  {
    name: 'projects, all, 7 a page, keys with letters in byte order',
    path: () => '/v1/projects?limit=7',
    expect: (pages, f) => {
      pagesOf(5)(pages, f);
      const keys = itemsOf(pages).map((i) => String(i.projectID));
      expect(keys.filter((k) => /[a-z]/i.test(k))).toEqual(['P-c', 'p-B', 'p-D', 'p-a', 'p_d']);
    },
  },
  { name: 'issuances, all, 9 a page', path: () => '/v1/issuances?limit=9', expect: pagesOf(9) },
  { name: 'units, all, 40 a page', path: () => '/v1/units?limit=40', expect: pagesOf(9) },
  {
    name: 'projects, removed=only',
    path: () => '/v1/projects?removed=only&limit=1',
    expect: pagesOf(2, (item) => item._removed_at !== null),
  },
  { name: 'projects, removed=true', path: () => '/v1/projects?removed=true&limit=11', expect: pagesOf(4) },
  {
    name: 'issuances, removed=only',
    path: () => '/v1/issuances?removed=only',
    expect: pagesOf(1, (item) => item._removed_at !== null),
  },
  {
    name: 'projects by country',
    path: (f) => `/v1/projects?country=${encodeURIComponent(f.country)}&limit=2`,
    expect: pagesOf(1, (item, f) => item.projectCountry === f.country),
  },
  {
    name: 'projects by program and status',
    path: (f) => `/v1/projects?program=${encodeURIComponent(f.program)}&status=Listed&limit=3`,
    expect: pagesOf(1, (item, f) => item.projectProgram === f.program && item.projectStatus === 'Listed'),
  },
  {
    name: 'projects by status date',
    path: () => '/v1/projects?from=2018-01-01&to=2021-12-31&limit=4',
    expect: pagesOf(2, inRange('ProjectStatusDate', '2018-01-01', '2021-12-31')),
  },
  {
    name: 'issuances of a project',
    path: (f) => `/v1/issuances?projectID=${f.issuanceProject}&limit=1`,
    expect: pagesOf(1, (item, f) => item.issuanceProjectId === f.issuanceProject),
  },
  {
    name: 'issuances of a vintage from a date',
    path: (f) => `/v1/issuances?vintage=${f.vintage}&from=2016-01-01&limit=2`,
    expect: pagesOf(1, (item, f) => item.issuanceVintageYear === f.vintage),
  },
  {
    name: 'units of an issuance',
    path: (f) => `/v1/units?issuance=${f.unitIssuance}&limit=2`,
    expect: pagesOf(1, (item, f) => item.unitsIssuanceID === f.unitIssuance),
  },
  {
    name: 'units by status and type',
    path: (f) => `/v1/units?status=Issued&type=${encodeURIComponent(f.unitType)}&limit=5`,
    expect: pagesOf(2, (item, f) => item.unitsStatus === 'Issued' && item.unitsType === f.unitType),
  },
  {
    name: 'units in date order, both bounds',
    path: () => '/v1/units?from=2016-01-01&to=2018-06-30&limit=6',
    expect: (pages, f) => {
      pagesOf(5, inRange('unitsDate', '2016-01-01', '2018-06-30'))(pages, f);
      const items = itemsOf(pages);
      const dates = items.map((i) => String(i.unitsDate));
      expect(dates).toEqual([...dates].sort());
      // Same day, then byte order as SQLite sorts keys: `B` (0x42) before `a` (0x61).
      const ids = items.map((i) => i.unitsOperationID);
      expect(ids.indexOf(f.upper)).toBeGreaterThanOrEqual(0);
      expect(ids.indexOf(f.upper)).toBeLessThan(ids.indexOf(f.lower));
    },
  },
  {
    name: 'units in date order, from only, with a status',
    path: () => '/v1/units?from=2019-01-01&status=Issued&limit=8',
    expect: pagesOf(2, (item) => String(item.unitsDate) >= '2019-01-01' && item.unitsStatus === 'Issued'),
  },
  {
    name: 'units in date order, an empty range',
    path: () => '/v1/units?from=1990-01-01&to=1990-12-31',
    expect: status(200),
  },
  { name: 'custody projects (none synced)', path: () => '/v1/custody/projects', expect: status(200) },
  {
    name: 'one project',
    path: (f) => `/v1/projects/${f.project}`,
    expect: (pages, f) => {
      status(200)(pages);
      expect(JSON.parse(pages[0]!.text)).toMatchObject({ projectID: f.project, _removed_at: null });
    },
  },
  {
    name: 'one removed project',
    path: (f) => `/v1/projects/${f.removedProject}`,
    expect: (pages) => {
      status(200)(pages);
      expect(JSON.parse(pages[0]!.text)._removed_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    },
  },
  { name: 'one issuance', path: (f) => `/v1/issuances/${f.issuance}`, expect: status(200) },
  { name: 'one unit', path: (f) => `/v1/units/${f.unit}`, expect: status(200) },
  { name: 'an unknown unit', path: () => '/v1/units/999999999', expect: status(404) },
  { name: 'an unknown project', path: () => '/v1/projects/no-such-project', expect: status(404) },
  { name: 'a vintage that is not a number', path: () => '/v1/issuances?vintage=abc', expect: status(400) },
  { name: 'a date that is not one', path: () => '/v1/units?from=2020-13-45', expect: status(400) },
  { name: 'an unknown filter', path: () => '/v1/projects?colour=green', expect: status(400) },
  { name: 'a forged cursor', path: () => '/v1/projects?cursor=bm90LWpzb24', expect: status(400) },
  {
    name: 'a well-formed cursor never given out',
    path: () => `/v1/projects?cursor=${Buffer.from('{"k":"5"}').toString('base64url')}`,
    expect: status(400),
  },
  {
    name: 'a key-order cursor on a date-ordered list',
    path: () => `/v1/units?from=2016-01-01&cursor=${encodeCursor({ k: '5' }, cursorKeyFor(TOKEN))}`,
    expect: status(400),
  },
  { name: 'removed=maybe', path: () => '/v1/units?removed=maybe', expect: status(400) },
];

/** The context both stores' syncs and APIs run in: the simulator as the operator, small pages. */
export function readsContext(sim: Simulator, clock: ManualClock) {
  return testContext({
    clock,
    overrides: {
      'operator.url': sim.url,
      'operator.api_key': 'sim-api-key',
      'operator.rate_per_second': 100_000,
      'sync.page_size': 50,
      'sync.units_overlap': 10,
      'api.listen': '127.0.0.1:0',
      'api.token': TOKEN,
    },
  });
}

/**
 * Syncs the simulator's registry into each mirror (the same runs, the same clock) over two days,
 * with removals, a changed status, new units and keys that are not digits; returns what the requests
 * filter on.
 */
export async function seedMirrors(
  sim: Simulator,
  ctx: AppContext,
  clock: ManualClock,
  mirrors: readonly MirrorUnderTest[],
): Promise<Facts> {
  const backends = mirrors.map((m) => m.backend);
  const syncEach = async () => {
    for (const target of ['projects', 'issuances', 'units'] as const)
      for (const backend of backends) {
        const outcome = await runSync(ctx, target, { sleep: noSleep, backend });
        expect(outcome.status).toBe('succeeded');
      }
  };

  const reg = sim.registry;
  const units = [...reg.snapshot('units').keys()];
  // Two units of one day: after the syncs their keys differ only in a letter's case (below).
  for (const id of units.slice(200, 202)) reg.change('units', id, { unitsDate: '2017-03-01' });
  await syncEach();

  // The next day: two projects and three issuances gone, a status changed, 25 new units.
  clock.advance(DAY);
  const projects = [...reg.snapshot('projects').keys()];
  const issuances = [...reg.snapshot('issuances').keys()];
  for (const id of projects.slice(10, 12)) reg.remove('projects', id);
  for (const id of issuances.slice(30, 33)) reg.remove('issuances', id);
  reg.change('projects', projects[3]!, { projectStatus: 'Registered' });
  reg.appendUnits(25);
  await syncEach();

  // Keys that are not digits, the same on both stores: SQLite sorts `B` (0x42) before `a` (0x61)
  // and `P` before `p`; a language collation sorts them the other way.
  const rekey = async (table: string, column: string, from: string, to: string) => {
    for (const m of mirrors) {
      const sql = `UPDATE ${table} SET "${column}" = $1 WHERE "${column}" = $2 RETURNING "${column}"`;
      expect(await m.query(sql, [to, from])).toHaveLength(1);
    }
  };
  const letters = ['p-a', 'p-B', 'P-c', 'p_d', 'p-D'];
  for (const [i, key] of letters.entries()) await rekey('projects', 'projectID', projects[20 + i]!, key);
  await rekey('unit_operations', 'unitsOperationID', units[200]!, 'u-a');
  await rekey('unit_operations', 'unitsOperationID', units[201]!, 'u-B');

  const project = reg.get('projects', projects[5]!)!;
  const issuance = reg.get('issuances', issuances[7]!)!;
  const unit = reg.get('units', units[9]!)!;
  return {
    lower: 'u-a',
    upper: 'u-B',
    project: projects[5]!,
    removedProject: projects[10]!,
    country: String(project.projectCountry),
    program: String(project.projectProgram),
    issuance: issuances[7]!,
    issuanceProject: Number(issuance.issuanceProjectId),
    vintage: Number(issuance.issuanceVintageYear),
    unit: units[9]!,
    unitIssuance: String(unit.unitsIssuanceID),
    unitType: String(unit.unitsType),
  };
}

/** The API on the store under test, with the facts of what it holds. */
export interface ReadsUnderTest {
  facts: Facts;
  call: Call;
  /** An API on another store's mirror of the same registry, which must answer the same bytes. */
  reference?: Call;
  close(): Promise<void>;
}

/** Registers the requests on the API over `mirror`; `open` syncs it and serves it. */
export function mirrorReadsCases(mirror: string, open: () => Promise<ReadsUnderTest>): void {
  describe(`the read API over ${mirror}`, () => {
    let api: ReadsUnderTest;
    beforeAll(async () => {
      api = await open();
    });
    afterAll(async () => {
      await api?.close();
    });

    it.each(CASES)('$name', async ({ path, expect: expected }) => {
      const url = path(api.facts);
      const pages = await walk(api.call, url);
      expected(pages, api.facts);
      if (api.reference) expect(pages).toEqual(await walk(api.reference, url));
    });
  });
}
