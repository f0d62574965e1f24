import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { inlined } from '../../src/postgres/inline.js';
import { openPostgres, type PgDatabase } from '../../src/postgres/open.js';
import { raw, sql } from '../../src/store/sql.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

/**
 * Values written into a statement as literals (postgres/inline.ts: the group's settles and claims
 * travel as one message) reach the server exactly as bound parameters would: quotes, backslashes,
 * placeholders and JSON in operator answers included.
 */

const cluster = inject('postgres');
let database: TestDatabase;
let pgDb: PgDatabase;
beforeAll(async () => {
  database = await createTestDatabase(cluster);
  pgDb = await openPostgres(database.url, { migrate: false });
});
afterAll(async () => {
  await pgDb?.close();
  await database?.drop();
});

const AWKWARD = [
  "it's",
  "back\\slash \\' both",
  'a $1 placeholder and $$dollars$$',
  '{"error":"bad \\"quote\\"","n":1}',
  'line\nbreak\ttab',
  'ünïcødé 🌱',
  '',
];

describe('inlined statements', () => {
  it('carry awkward text as bound parameters do', async () => {
    for (const text of AWKWARD) {
      const statement = sql`SELECT ${text}::text AS v, ${text} = ${text} AS same`;
      const { rows } = await pgDb.pool.query<{ v: string; same: boolean }>(inlined(statement));
      expect(rows[0]).toEqual({ v: text, same: true });
    }
  });

  it('carry arrays with nulls, numbers and times, typed by their casts', async () => {
    const statement = sql`SELECT ${AWKWARD}${raw('::text[]')} AS texts, ${[1, null, 3]}${raw('::int8[]')} AS ids,
      ${['2026-03-01T00:00:00.000Z', null]}${raw('::timestamptz[]')} AS times, ${null}::int4 AS nothing`;
    const { rows } = await pgDb.pool.query(inlined(statement));
    expect(rows[0]).toEqual({
      texts: AWKWARD,
      ids: ['1', null, '3'],
      times: [new Date('2026-03-01T00:00:00.000Z'), null],
      nothing: null,
    });
  });
});
