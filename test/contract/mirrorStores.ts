import { expect } from 'vitest';
import type { SqliteContext } from '../../src/app/sqliteStores.js';
import type { HealthReads } from '../../src/health/snapshot.js';
import type { MirrorBackend } from '../../src/mirror/backend.js';
import { RESOURCE_FIELDS, type ResourceName } from '../../src/operator/fields.js';
import { pgHealthReads } from '../../src/postgres/health.js';
import { pgBackend } from '../../src/postgres/mirror.js';
import type { PgDatabase } from '../../src/postgres/open.js';
import { sqliteHealthReads } from '../../src/sqlite/health.js';
import { sqliteBackend } from '../../src/sqlite/mirror.js';
import { expectRowMatches, type Harness } from '../mirror/harness.js';

/**
 * The mirror as a test reads it, on either store: SQLite's file (`ctx.database`) or a PostgreSQL
 * database, its rows turned back into SQLite's forms (booleans 0/1, lists as JSON text, bigint as
 * numbers) so the same field-by-field assertions hold for both.
 */
export interface MirrorUnderTest {
  kind: 'sqlite' | 'postgres';
  /** What `runSync` gets. */
  backend: MirrorBackend;
  /** What status reads on this store. */
  health: HealthReads;
  query(sql: string, params?: unknown[]): Promise<Record<string, unknown>[]>;
}

export function sqliteMirror(ctx: SqliteContext): MirrorUnderTest {
  return {
    kind: 'sqlite',
    backend: sqliteBackend(ctx.database.sqlite),
    health: sqliteHealthReads(ctx.database.sqlite),
    async query(sql, params = []) {
      // PostgreSQL's $n placeholders, in order, as SQLite's ?.
      return ctx.database.sqlite.prepare(sql.replace(/\$\d+/g, '?')).all(...params) as Record<
        string,
        unknown
      >[];
    },
  };
}

export function pgMirror(store: PgDatabase): MirrorUnderTest {
  return {
    kind: 'postgres',
    backend: pgBackend(store.pool),
    health: pgHealthReads(store.pool),
    async query(sql, params = []) {
      return (await store.pool.query(sql, params)).rows as Record<string, unknown>[];
    },
  };
}

const SIM_NAME = { projects: 'projects', issuances: 'issuances', unit_operations: 'units' } as const;
type ListTable = keyof typeof SIM_NAME;

/** A PostgreSQL row in SQLite's forms; `_raw` as JSON text. */
export function sqliteForm(table: ResourceName, row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...row };
  for (const f of RESOURCE_FIELDS[table].fields) {
    const v = row[f.name];
    if (v === null || v === undefined) continue;
    if (f.type === 'bool') out[f.name] = v === true ? 1 : 0;
    else if (f.type === 'textList') out[f.name] = JSON.stringify(v);
    else if (f.type === 'int') out[f.name] = Number(v);
  }
  if (typeof row._raw !== 'string') out._raw = JSON.stringify(row._raw);
  return out;
}

/** Live rows of a table by key. */
export async function liveRows(
  m: MirrorUnderTest,
  table: ResourceName,
): Promise<Map<string, Record<string, unknown>>> {
  const key = RESOURCE_FIELDS[table].key;
  const rows = await m.query(`SELECT * FROM ${table} WHERE _removed_at IS NULL`);
  return new Map(rows.map((r) => [String(r[key]), m.kind === 'postgres' ? sqliteForm(table, r) : r]));
}

/** Asserts the lists in the mirror equal the simulator's registry, field by field. */
export async function expectMirrorEquals(
  m: MirrorUnderTest,
  h: Pick<Harness, 'sim'>,
  tables: readonly ListTable[] = ['projects', 'issuances', 'unit_operations'],
): Promise<void> {
  for (const table of tables) {
    const expected = h.sim.registry.snapshot(SIM_NAME[table]);
    const rows = await liveRows(m, table);
    expect([...rows.keys()].sort(), `${m.kind} ${table} keys`).toEqual([...expected.keys()].sort());
    for (const [id, record] of expected) expectRowMatches(table, rows.get(id), record);
  }
}

const CUSTODY_TABLES = {
  projects: 'custody_projects',
  issuances: 'custody_issuances',
  units: 'custody_units',
} as const;

/**
 * Asserts the custody tables hold exactly what the simulator has in custody, field by field: a row
 * whose custody ended is not in custody; `quarantined` ids are expected absent.
 */
export async function expectCustodyEquals(
  m: MirrorUnderTest,
  h: Pick<Harness, 'sim'>,
  quarantined: readonly string[] = [],
): Promise<void> {
  const reg = h.sim.registry;
  for (const [kind, table] of Object.entries(CUSTODY_TABLES) as [
    keyof typeof CUSTODY_TABLES,
    ResourceName,
  ][]) {
    const key = RESOURCE_FIELDS[table].key;
    const rows = await m.query(`SELECT * FROM ${table} WHERE _custody_ended_at IS NULL`);
    const byKey = new Map(
      rows.map((r) => [String(r[key]), m.kind === 'postgres' ? sqliteForm(table, r) : r]),
    );
    const expected = reg
      .custodyIds(kind)
      .map(String)
      .filter((id) => reg.inCustody(kind, id) && !quarantined.includes(id));
    expect([...byKey.keys()].sort(), `${m.kind} ${table} keys`).toEqual([...expected].sort());
    for (const id of expected) expectRowMatches(table, byKey.get(id), reg.get(kind, id)!);
  }
}

/** Queues an outbox row as the marketplace would (state as given), on either store. */
export async function queueOutboxRow(
  m: MirrorUnderTest,
  ref: string,
  operationType: string,
  body: unknown,
  state: string,
): Promise<void> {
  const at = '2026-01-01T00:00:00.000Z';
  await m.query(
    `INSERT INTO outbox ("marketplaceTransactionRef", "operationType", body, body_hash, state, next_attempt_at, created_at, updated_at)
     VALUES ($1, $2, $3, 'h', $4, $5, $6, $7) RETURNING id`,
    [ref, operationType, JSON.stringify(body), state, at, at, at],
  );
}

/** A number from either driver (PostgreSQL's count and bigint come as text). */
export async function scalar(m: MirrorUnderTest, sql: string, params: unknown[] = []): Promise<number> {
  const row = (await m.query(sql, params))[0];
  return Number(row ? Object.values(row)[0] : 0);
}

/** The feed after `seq`, as (resource, record_id, kind). */
export async function feedAfter(m: MirrorUnderTest, seq: number): Promise<string[]> {
  const rows = await m.query('SELECT resource, record_id, kind FROM changes WHERE seq > $1 ORDER BY seq', [
    seq,
  ]);
  return rows.map((r) => `${String(r.resource)} ${String(r.record_id)} ${String(r.kind)}`);
}
