import { Writable } from 'node:stream';
import { expect } from 'vitest';
import type { SqliteContext } from '../../src/app/sqliteStores.js';
import { createLogger } from '../../src/common/log.js';
import type { ResourceName as TableName } from '../../src/operator/fields.js';
import { RESOURCE_FIELDS } from '../../src/operator/fields.js';
import { normalizeRecord } from '../../src/operator/schemas.js';
import { type Simulator, type SimulatorOptions, startSimulator } from '../../src/simulator/index.js';
import { testContext } from '../helpers/context.js';

/** A simulator and a real context pointed at it. */
export interface Harness {
  sim: Simulator;
  ctx: ReturnType<typeof testContext>;
  close(): Promise<void>;
}

/** Starts a simulator and a context whose custody config names the simulator's custody ids. */
export async function harness(
  simOptions: SimulatorOptions = {},
  overrides: Record<string, unknown> = {},
): Promise<Harness> {
  const sim = await startSimulator({ projects: 20, issuances: 60, units: 300, ...simOptions });
  const ctx = testContext({
    overrides: {
      'operator.url': sim.url,
      'operator.api_key': 'sim-api-key',
      'operator.rate_per_second': 100_000,
      'operator.timeout_ms': 5_000,
      'sync.page_size': 50,
      'sync.units_overlap': 10,
      'sync.page_attempts': 4,
      'custody.projects': sim.registry.custodyIds('projects').map(String),
      'custody.issuances': sim.registry.custodyIds('issuances').map(String),
      'custody.units': sim.registry.custodyIds('units').map(String),
      ...overrides,
    },
  });
  return {
    sim,
    ctx,
    async close() {
      ctx.operator().close();
      ctx.dispose();
      await sim.close();
    },
  };
}

/** Sends the context's log lines (debug and up) to the returned array, parsed. */
export function captureLog(ctx: SqliteContext): Record<string, unknown>[] {
  const lines: Record<string, unknown>[] = [];
  ctx.log = createLogger({
    level: 'debug',
    destination: new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n'))
          if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    }),
  });
  return lines;
}

/** A retry sleep that does not wait. */
export const noSleep = async (_ms: number): Promise<void> => {};

const SIM_NAME: Record<'projects' | 'issuances' | 'unit_operations', 'projects' | 'issuances' | 'units'> = {
  projects: 'projects',
  issuances: 'issuances',
  unit_operations: 'units',
};

type Row = Record<string, unknown>;

/** Live mirror rows of a table by key. */
export function liveRows(ctx: SqliteContext, table: TableName): Map<string, Row> {
  const key = RESOURCE_FIELDS[table].key;
  const rows = ctx.database.sqlite.prepare(`SELECT * FROM ${table} WHERE _removed_at IS NULL`).all() as Row[];
  return new Map(rows.map((r) => [String(r[key]), r]));
}

/** Asserts a mirror row holds exactly `record`: `_raw` as JSON and every field column. */
export function expectRowMatches(
  table: TableName,
  row: Row | undefined,
  record: Record<string, unknown>,
): void {
  expect(row, `row for ${String(record[RESOURCE_FIELDS[table].key])}`).toBeDefined();
  expect(JSON.parse(String(row!._raw))).toEqual(record);
  const normalized = normalizeRecord(table, record);
  if (!normalized.ok) throw new Error(normalized.reason);
  RESOURCE_FIELDS[table].fields.forEach((f, i) => {
    expect(row![f.name], f.name).toEqual(normalized.record.values[i]);
  });
}

/** Asserts the three public lists in the mirror equal the simulator's registry, field by field. */
export function expectMirrorEqualsRegistry(
  h: Harness,
  tables: readonly ('projects' | 'issuances' | 'unit_operations')[] = [
    'projects',
    'issuances',
    'unit_operations',
  ],
): void {
  for (const table of tables) {
    const expected = h.sim.registry.snapshot(SIM_NAME[table]);
    const rows = liveRows(h.ctx, table);
    expect([...rows.keys()].sort(), `${table} keys`).toEqual([...expected.keys()].sort());
    for (const [id, record] of expected) expectRowMatches(table, rows.get(id), record);
  }
}

/** Count of rows in a table. */
export function count(ctx: SqliteContext, sql: string, ...params: unknown[]): number {
  return (ctx.database.sqlite.prepare(sql).get(...params) as { n: number }).n;
}
