import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listStatement } from '../../src/api/mirrorQueries.js';
import type { createApiComponent } from '../../src/api/server.js';
import { runSync } from '../../src/mirror/syncRun.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { sqliteDialect } from '../../src/sqlite/scripts.js';
import { testContext } from '../helpers/context.js';
import { apiCaller } from '../helpers/http.js';
import { sqliteApiComponent } from '../helpers/sqliteApi.js';

const TOKEN = 'units-api-token-0123456789';
let sim: Simulator;
let ctx: ReturnType<typeof testContext>;
let api: ReturnType<typeof createApiComponent>;
let call: ReturnType<typeof apiCaller>;

type Json = Record<string, unknown>;

async function allPages(path: string, limit: number): Promise<Json[]> {
  const items: Json[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const res = await call('GET', `${path}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(res.status, res.text).toBe(200);
    items.push(...(res.json.items as Json[]));
    cursor = res.json.next as string | null;
  } while (cursor !== null && ++pages < 1000);
  return items;
}

const ids = (rows: Json[]) => rows.map((r) => String(r.unitsOperationID));

beforeAll(async () => {
  sim = await startSimulator({ projects: 5, issuances: 8, units: 400 });
  // The log's dates follow its ids; a date order that merely repeated the key order would prove
  // nothing, so some operations are moved to other days (ties included).
  const units = [...sim.registry.snapshot('units').values()];
  units.forEach((u, i) => {
    if (i % 7 === 0)
      sim.registry.change('units', String(u.unitsOperationID), { unitsDate: `2016-0${1 + (i % 9)}-15` });
  });
  ctx = testContext({
    overrides: {
      'operator.url': sim.url,
      'operator.api_key': 'sim-api-key',
      'operator.rate_per_second': 100_000,
      'api.listen': '127.0.0.1:0',
      'api.token': TOKEN,
      'sync.page_size': 100,
    },
  });
  const outcome = await runSync(ctx, 'units');
  expect(outcome.status, outcome.error ?? '').toBe('succeeded');
  api = sqliteApiComponent(ctx);
  await api.start();
  call = apiCaller(`http://127.0.0.1:${api.address()!.port}`, TOKEN);
});

afterAll(async () => {
  await api.stop();
  ctx.operator().close();
  ctx.dispose();
  await sim.close();
});

describe('GET /v1/units with a date range', () => {
  it('walks every unit in range once, in date then key order, across pages', async () => {
    const units = [...sim.registry.snapshot('units').values()];
    const [from, to] = ['2016-02-01', '2018-06-30'];
    const expected = units
      .filter((u) => String(u.unitsDate) >= from && String(u.unitsDate) <= to)
      .sort((a, b) =>
        String(a.unitsDate) === String(b.unitsDate)
          ? String(a.unitsOperationID).localeCompare(String(b.unitsOperationID))
          : String(a.unitsDate).localeCompare(String(b.unitsDate)),
      );
    expect(expected.length).toBeGreaterThan(20);
    const got = await allPages(`/v1/units?from=${from}&to=${to}`, 7);
    expect(ids(got)).toEqual(ids(expected));

    const status = String(expected[0]!.unitsStatus);
    const withStatus = await allPages(`/v1/units?status=${encodeURIComponent(status)}&from=${from}`, 3);
    expect(ids(withStatus)).toEqual(
      ids(
        units
          .filter((u) => u.unitsStatus === status && String(u.unitsDate) >= from)
          .sort((a, b) =>
            String(a.unitsDate) === String(b.unitsDate)
              ? String(a.unitsOperationID).localeCompare(String(b.unitsOperationID))
              : String(a.unitsDate).localeCompare(String(b.unitsDate)),
          ),
      ),
    );
  });

  it('keeps key order without a date filter, and refuses a key-only cursor on a date-ordered list', async () => {
    const byKey = await allPages('/v1/units?type=Avoidance', 9);
    expect(ids(byKey)).toEqual([...ids(byKey)].sort());
    const first = await call('GET', '/v1/units?type=Avoidance&limit=2');
    const res = await call('GET', `/v1/units?from=2016-01-01&cursor=${first.json.next as string}`);
    expect(res.status).toBe(400);
    expect(res.json.error).toMatch(/^cursor: /);
  });
});

describe('unit filters read one index range, never the whole table or a sort', () => {
  const shapes: Array<[string, Record<string, string>]> = [
    ['issuance', { unitsIssuanceID: '100000' }],
    ['status', { unitsStatus: 'Issued' }],
    ['issuance and status', { unitsIssuanceID: '100000', unitsStatus: 'Issued' }],
    ['date range', { from: '2016-01-01', to: '2017-01-01' }],
    ['status and date range', { unitsStatus: 'Held', from: '2016-01-01', to: '2017-01-01' }],
    ['status and open date range', { unitsStatus: 'Held', to: '2017-01-01' }],
  ];
  it.each(shapes)('%s', (_name, params) => {
    // Render the statement listRecords runs and ask SQLite for its plan, after the sync's statistics.
    const sqlite = ctx.database.sqlite;
    const filters = Object.entries(params).map(([column, value]) =>
      column === 'from'
        ? { column: 'unitsDate', op: '>=' as const, value }
        : column === 'to'
          ? { column: 'unitsDate', op: '<=' as const, value }
          : { column, op: '=' as const, value },
    );
    for (const after of [undefined, '1000000040']) {
      const { text, values } = listStatement({
        resource: 'unit_operations',
        filters,
        removed: 'false',
        after,
        afterDate: after ? '2016-01-01' : undefined,
        limit: 50,
        dateOrder: 'unitsDate',
      }).statement.render(sqliteDialect);
      const plan = (sqlite.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...values) as { detail: string }[])
        .map((r) => r.detail)
        .join(' | ');
      expect(plan, plan).toMatch(/^SEARCH unit_operations USING INDEX unit_operations_\w+_key_idx/);
      expect(plan, plan).not.toMatch(/TEMP B-TREE|SCAN/);
    }
  });
});
