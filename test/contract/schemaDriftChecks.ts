import { afterEach, expect } from 'vitest';
import { runSchemaCommand } from '../../src/commands/schema.js';
import type { Config } from '../../src/config/config.js';
import { subscriberSchema } from '../../src/config/configSubscribers.js';
import type { AppContext } from '../../src/context.js';
import { readHealth } from '../../src/health/readHealth.js';
import type { SchemaChangeSink } from '../../src/mirror/shape/tracker.js';
import { RESOURCE_FIELDS, type ResourceName as TableName } from '../../src/operator/fields.js';
import { normalizeRecord } from '../../src/operator/schemas.js';
import type { JsonObject } from '../../src/simulator/index.js';
import { configuredSchemaChangesSink } from '../../src/subscribers/subscribers.js';
import { captureLog, type Harness, harness } from '../mirror/harness.js';
import { liveRows, type MirrorUnderTest, scalar } from './mirrorStores.js';

/** A fresh store for one case, its mirror writing through `sink` (the subscribers'). */
export type OpenDriftMirror = (h: Harness, sink: SchemaChangeSink | undefined) => Promise<MirrorUnderTest>;

/** The simulator's size in the drift suites. */
export const SIZES = { projects: 30, issuances: 30, units: 40 };

/**
 * Registers the closing of each case's simulator, and returns what sets a case up: a simulator, the
 * mirror on a fresh store with its subscribers, a clock whose every reading is a later millisecond
 * (a run's steps never share a time by luck), and the log lines captured.
 */
export function driftSetup(open: OpenDriftMirror) {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });
  return async (overrides: Record<string, unknown> = {}) => {
    h = await harness(SIZES, { 'sync.page_size': 10, ...overrides });
    let t = Date.parse('2026-03-01T00:00:00.000Z');
    h.ctx.clock = { now: () => ++t };
    const m = await open(h, subscribersSink());
    return { h, m, log: captureLog(h.ctx) };
  };
}

/**
 * What the schema-drift suite (schemaDrift.cases.ts) asserts of one change, on either store: one
 * `schema_changes` row, one feed row, one delivery to the subscriber that asked for
 * `schema.changed` (none to the one that did not), one `sync.schema.changed` line; and the mirror
 * as the policy leaves it (admitted records as served, quarantined ones as they were).
 */

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
/** `apps` asks for `schema.changed`; `ops` takes the default events (operations only). */
export const SUBSCRIBERS = [
  subscriberSchema.parse({
    name: 'apps',
    url: 'http://127.0.0.1:9/apps',
    secret: SECRET,
    events: ['schema.changed'],
  }),
  subscriberSchema.parse({ name: 'ops', url: 'http://127.0.0.1:9/ops', secret: SECRET }),
];

/** The sink the root hands the mirror for the two subscribers. */
export function subscribersSink(): SchemaChangeSink | undefined {
  return configuredSchemaChangesSink({ subscribers: SUBSCRIBERS });
}

/** The context with `[sync]` keys replaced (a new configuration of the same database and operator). */
export function withSync(ctx: AppContext, patch: Partial<AppContext['config']['sync']>): AppContext {
  return { ...ctx, config: { ...ctx.config, sync: { ...ctx.config.sync, ...patch } } };
}

/** The `[sync.schema]` settings with some replaced. */
export function withSchema(
  ctx: AppContext,
  patch: Partial<AppContext['config']['sync']['schema']>,
): AppContext {
  return withSync(ctx, { schema: { ...ctx.config.sync.schema, ...patch } });
}

export interface ExpectedChange {
  table: TableName;
  field: string;
  kind: string;
  before: string | null;
  after: string;
  mapped: boolean;
}

const bool = (v: unknown) => v === true || v === 1;

/**
 * Asserts the change is recorded once, everywhere: returns its id. `log` is every line captured
 * since the mirror was opened; `examples`: keys a record showing it may have (null: none expected).
 */
export async function expectRecordedOnce(
  m: MirrorUnderTest,
  log: readonly Record<string, unknown>[],
  want: ExpectedChange,
  examples: ReadonlySet<string> | null,
): Promise<number> {
  const rows = await m.query(
    'SELECT id, resource, field, kind, before, after, mapped, example_key, count, run_id FROM schema_changes',
  );
  expect(rows, `${m.kind}: the only schema_changes row`).toHaveLength(1);
  const row = rows[0]!;
  expect({ ...row, mapped: bool(row.mapped) }).toMatchObject({
    resource: want.table,
    field: want.field,
    kind: want.kind,
    before: want.before,
    after: want.after,
    mapped: want.mapped,
  });
  // A removal counts the records of the scan that lacked it (asserted by the cases that know them).
  if (want.kind !== 'field-removed') expect(Number(row.count)).toBeGreaterThan(0);
  expect(row.run_id).not.toBeNull();
  if (examples === null) expect(row.example_key).toBeNull();
  else expect(examples.has(String(row.example_key)), `example key ${String(row.example_key)}`).toBe(true);
  const id = Number(row.id);

  expect(
    await m.query("SELECT record_id, kind FROM changes WHERE resource = 'schema_changes'"),
    'one feed row',
  ).toEqual([{ record_id: String(id), kind: 'insert' }]);

  const deliveries = await m.query('SELECT subscriber, event_type, ref, body FROM deliveries');
  expect(deliveries.map((d) => [d.subscriber, d.event_type, d.ref])).toEqual([
    ['apps', 'schema.changed', `schema_changes:${id}`],
  ]);
  const body = JSON.parse(String(deliveries[0]!.body)) as { type: string; data: Record<string, unknown> };
  expect(body.type).toBe('schema.changed');
  expect(body.data).toMatchObject({
    id,
    resource: want.table,
    field: want.field,
    kind: want.kind,
    before: want.before,
    after: want.after,
    mapped: want.mapped,
  });

  const lines = log.filter((l) => l.event === 'sync.schema.changed');
  expect(lines, 'one sync.schema.changed line').toHaveLength(1);
  expect(lines[0]).toMatchObject({ table: want.table, field: want.field, kind: want.kind, changeId: id });
  // An error when it hits a field the mirror maps to a column, else a warning.
  expect(lines[0]!.level).toBe(want.mapped ? 'error' : 'warn');
  return id;
}

/**
 * Asserts the change `id` is shown where on-call and apps look: status (the problem
 * `upstream-schema-changed` naming its table and field; critical when mapped or records are held
 * back) as of `now`, and `vcu-sync schema TABLE` (its text and its `--json`), on either store.
 */
export async function expectShown(
  m: MirrorUnderTest,
  config: Config,
  want: ExpectedChange,
  id: number,
  now: number,
): Promise<void> {
  const health = await readHealth(m.health, config, now);
  const problem = health.problems.find((p) => p.code === 'upstream-schema-changed');
  expect(problem, `${m.kind}: the status problem`).toBeDefined();
  expect(problem!.message).toContain(want.table);
  expect(problem!.message).toContain(want.field);
  const held = await scalar(
    m,
    "SELECT count(*) AS n FROM quarantine WHERE resolved_at IS NULL AND reason LIKE 'schema: %'",
  );
  expect(problem!.severity).toBe(want.mapped || held > 0 ? 'critical' : 'warning');

  const query = { resource: want.table, since: null, limit: 100 };
  const printed = async (json: boolean) => {
    let text = '';
    // What the command prints, collected (it writes only whole strings).
    const stdout = {
      write(chunk: string) {
        text += chunk;
        return true;
      },
    } as unknown as NodeJS.WritableStream;
    expect(await runSchemaCommand((s) => m.backend.db.read(s), query, { json, stdout })).toBe(0);
    return text;
  };
  const answer = JSON.parse(await printed(true)) as {
    changes: { id: number; field: string; kind: string }[];
  };
  expect(answer.changes.map((c) => [c.id, c.field, c.kind])).toEqual([[id, want.field, want.kind]]);
  const text = await printed(false);
  expect(text).toMatch(new RegExp(`${want.table}\\s+${want.field}\\s+${want.kind}`));
}

/** Nothing reported: no change row, feed row, delivery or log line. */
export async function expectNothingReported(m: MirrorUnderTest, log: readonly Record<string, unknown>[]) {
  expect(await scalar(m, 'SELECT count(*) AS n FROM schema_changes'), `${m.kind}: schema_changes`).toBe(0);
  expect(await scalar(m, "SELECT count(*) AS n FROM changes WHERE resource = 'schema_changes'")).toBe(0);
  expect(await scalar(m, 'SELECT count(*) AS n FROM deliveries')).toBe(0);
  expect(log.filter((l) => l.event === 'sync.schema.changed')).toEqual([]);
}

/**
 * Asserts a mirror row holds `record` as admitted: `_raw` is the record as received, the columns in
 * `nullColumns` are null (a type change stored), every other column is the record's value.
 */
export function expectRowAdmits(
  table: TableName,
  row: Record<string, unknown> | undefined,
  record: JsonObject,
  nullColumns: readonly string[] = [],
): void {
  const key = String(record[RESOURCE_FIELDS[table].key]);
  expect(row, `row ${key}`).toBeDefined();
  expect(JSON.parse(String(row!._raw)), `_raw of ${key}`).toEqual(record);
  const rest = Object.fromEntries(Object.entries(record).filter(([k]) => !nullColumns.includes(k)));
  const normalized = normalizeRecord(table, rest);
  if (!normalized.ok) throw new Error(`${key}: ${normalized.reason}`);
  RESOURCE_FIELDS[table].fields.forEach((f, i) => {
    expect(row![f.name], `${key}.${f.name}`).toEqual(
      nullColumns.includes(f.name) ? null : normalized.record.values[i],
    );
  });
}

const SIM_NAME = { projects: 'projects', issuances: 'issuances', unit_operations: 'units' } as const;
export type ListTable = keyof typeof SIM_NAME;

/**
 * The mirror equals upstream for every record the policy admits: the live keys are the served
 * ones; a `quarantined` key's row is exactly the row it had before (`before`), every other row is
 * the served record (with `nullColumns` null where the policy stored a type change).
 */
export async function expectMirrorServes(
  m: MirrorUnderTest,
  h: Pick<Harness, 'sim'>,
  table: ListTable,
  opts: {
    quarantined?: ReadonlySet<string>;
    before?: ReadonlyMap<string, Record<string, unknown>>;
    nullColumns?: (record: JsonObject) => string[];
  } = {},
): Promise<void> {
  const served = h.sim.registry.servedSnapshot(SIM_NAME[table]);
  const rows = await liveRows(m, table);
  const quarantined = opts.quarantined ?? new Set<string>();
  const expectedKeys = [...served.keys()].filter((k) => !quarantined.has(k) || opts.before?.has(k));
  expect([...rows.keys()].sort(), `${m.kind} ${table} keys`).toEqual(expectedKeys.sort());
  for (const [id, record] of served) {
    if (quarantined.has(id)) {
      if (opts.before?.has(id)) expect(rows.get(id), `${id} unchanged`).toEqual(opts.before.get(id));
      continue;
    }
    expectRowAdmits(table, rows.get(id), record, opts.nullColumns?.(record) ?? []);
  }
}
