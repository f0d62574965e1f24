import { performance } from 'node:perf_hooks';
import { type ColumnFilter, listRecords, listStatement } from '../../../src/api/mirrorQueries.js';
import { Rng } from '../../../src/simulator/prng.js';
import { UNIT_STATUSES, UNIT_TYPES } from '../../../src/simulator/vocab.js';
import type { Sqlite } from '../../../src/sqlite/open.js';
import { sqliteDialect } from '../../../src/sqlite/scripts.js';

const LIMIT = 100;

/** `GET /v1/units` parameters and the mirror column each filters. */
const PARAMS: Record<string, { column: string; op: ColumnFilter['op'] }> = {
  issuance: { column: 'unitsIssuanceID', op: '=' },
  status: { column: 'unitsStatus', op: '=' },
  type: { column: 'unitsType', op: '=' },
  from: { column: 'unitsDate', op: '>=' },
  to: { column: 'unitsDate', op: '<=' },
};

/** One reader's walk: a filter set, then following `next` for up to `pages` pages. */
export interface UnitsQuery {
  /** Which kind of filter, e.g. "status + month". */
  shape: string;
  params: Record<string, string>;
  pages: number;
  /** Runs the walk through the API; the milliseconds of each page (one request each). */
  http(base: string, token: string): Promise<number[]>;
  /**
   * Runs the same SQL directly (the API's listRecords); the milliseconds of each page. With
   * `serialize`, each page is also turned into the API's JSON body, as the handler does.
   */
  direct(serialize?: boolean): number[];
  /** The query plan of the walk's first page (EXPLAIN QUERY PLAN of the SQL listRecords runs). */
  plan(): string[];
}

function addDays(day: string, days: number): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
}

/**
 * Walks with filters people use on units (issuance, status, type, a month or a year of dates, open
 * ranges, and combinations), values drawn from the mirror itself with a fixed seed, until they add
 * up to `requests` pages.
 */
export function unitsQueryMix(sqlite: Sqlite, requests: number): UnitsQuery[] {
  const rng = new Rng(17);
  const maxRowid = sqlite.prepare('SELECT max(rowid) FROM unit_operations').pluck().get() as number;
  const sample = sqlite.prepare('SELECT unitsIssuanceID, unitsDate FROM unit_operations WHERE rowid = ?');
  const pick = (): { issuance: string; day: string } => {
    const row = sample.get(rng.int(1, maxRowid)) as { unitsIssuanceID: string; unitsDate: string };
    return { issuance: row.unitsIssuanceID, day: row.unitsDate };
  };
  const shapes: Array<[string, () => Record<string, string>]> = [
    ['issuance', () => ({ issuance: pick().issuance })],
    ['status', () => ({ status: rng.pick(UNIT_STATUSES) })],
    ['type', () => ({ type: rng.pick(UNIT_TYPES) })],
    [
      'month',
      () => {
        const { day } = pick();
        return { from: day, to: addDays(day, 30) };
      },
    ],
    [
      'year',
      () => {
        const { day } = pick();
        return { from: day, to: addDays(day, 365) };
      },
    ],
    [
      'status + month',
      () => {
        const { day } = pick();
        return { status: rng.pick(UNIT_STATUSES), from: day, to: addDays(day, 30) };
      },
    ],
    [
      'issuance + status',
      () => {
        const { issuance } = pick();
        return { issuance, status: rng.pick(['Issued', 'Retired'] as const) };
      },
    ],
    [
      'type + status + from',
      () => ({ type: rng.pick(UNIT_TYPES), status: rng.pick(UNIT_STATUSES), from: pick().day }),
    ],
    ['to', () => ({ to: pick().day })],
    ['status + to', () => ({ status: rng.pick(UNIT_STATUSES), to: pick().day })],
  ];

  const queries: UnitsQuery[] = [];
  for (let total = 0, i = 0; total < requests; i++) {
    const [shape, make] = shapes[i % shapes.length]!;
    const pages = Math.min(1 + (i % 3), requests - total);
    total += pages;
    queries.push(walk(sqlite, shape, make(), pages));
  }
  return queries;
}

function walk(sqlite: Sqlite, shape: string, params: Record<string, string>, pages: number): UnitsQuery {
  const filters: ColumnFilter[] = Object.entries(params).map(([name, value]) => ({
    ...PARAMS[name]!,
    value,
  }));
  return {
    shape,
    params,
    pages,
    async http(base, token) {
      const times: number[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < pages; page++) {
        const query = new URLSearchParams({ ...params, limit: String(LIMIT) });
        if (cursor) query.set('cursor', cursor);
        const t0 = performance.now();
        const res = await fetch(`${base}/v1/units?${query}`, {
          headers: { authorization: `Bearer ${token}` },
        });
        const body = (await res.json()) as { items: unknown[]; next: string | null };
        times.push(performance.now() - t0);
        if (res.status !== 200) throw new Error(`GET /v1/units?${query}: ${res.status}`);
        cursor = body.next;
        if (cursor === null) break;
      }
      return times;
    },
    direct(serialize = false) {
      const times: number[] = [];
      let after: string | undefined;
      let afterDate: string | undefined;
      for (let page = 0; page < pages; page++) {
        const t0 = performance.now();
        const { rows, lastKey, lastDate } = listRecords(sqlite, {
          resource: 'unit_operations',
          filters,
          removed: 'false',
          after,
          afterDate,
          limit: LIMIT,
          dateOrder: 'unitsDate',
        });
        if (serialize) JSON.stringify({ items: rows, next: lastKey });
        times.push(performance.now() - t0);
        if (lastKey === null) break;
        after = lastKey;
        afterDate = lastDate;
      }
      return times;
    },
    plan() {
      // The statement listRecords runs, rendered for SQLite, then explained.
      const { text, values } = listStatement({
        resource: 'unit_operations',
        filters,
        removed: 'false',
        after: undefined,
        limit: LIMIT,
        dateOrder: 'unitsDate',
      }).statement.render(sqliteDialect);
      return (sqlite.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...values) as { detail: string }[]).map(
        (r) => r.detail,
      );
    },
  };
}
