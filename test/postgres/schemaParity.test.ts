import { is } from 'drizzle-orm';
import { PgTable, getTableConfig as pgTableConfig } from 'drizzle-orm/pg-core';
import { SQLiteTable, getTableConfig as sqliteTableConfig } from 'drizzle-orm/sqlite-core';
import { describe, expect, it } from 'vitest';
import * as pgSchema from '../../src/db/schema/postgres.js';
import * as sqliteSchema from '../../src/db/schema/sqlite.js';

/**
 * The PostgreSQL schema is the SQLite one in other types: same tables, same column names (SQL
 * readers and the store code rely on them), same indexes, same keys. Both are built from one
 * description (src/db/schema/tables.ts); derived from drizzle's table objects, this fails when a
 * dialect's kinds or table builder (sqlite.ts, postgres.ts) drop or add a constraint.
 */

type Shape = Record<
  string,
  { columns: string[]; notNull: string[]; primaryKey: string[]; indexes: string[] }
>;

function sqliteShape(): Shape {
  const shape: Shape = {};
  for (const table of Object.values(sqliteSchema)) {
    if (!is(table, SQLiteTable)) continue;
    const config = sqliteTableConfig(table);
    shape[config.name] = {
      columns: config.columns.map((c) => c.name).sort(),
      notNull: config.columns
        .filter((c) => c.notNull)
        .map((c) => c.name)
        .sort(),
      primaryKey: [
        ...config.columns.filter((c) => c.primary).map((c) => c.name),
        ...config.primaryKeys.flatMap((pk) => pk.columns.map((c) => c.name)),
      ].sort(),
      indexes: config.indexes.map((i) => `${i.config.name}${i.config.unique ? ' unique' : ''}`).sort(),
    };
  }
  return shape;
}

function pgShape(): Shape {
  const shape: Shape = {};
  for (const table of Object.values(pgSchema)) {
    if (!is(table, PgTable)) continue;
    const config = pgTableConfig(table);
    shape[config.name] = {
      columns: config.columns.map((c) => c.name).sort(),
      notNull: config.columns
        .filter((c) => c.notNull)
        .map((c) => c.name)
        .sort(),
      primaryKey: [
        ...config.columns.filter((c) => c.primary).map((c) => c.name),
        ...config.primaryKeys.flatMap((pk) => pk.columns.map((c) => c.name)),
      ].sort(),
      indexes: config.indexes.map((i) => `${i.config.name}${i.config.unique ? ' unique' : ''}`).sort(),
    };
  }
  return shape;
}

describe('PostgreSQL schema against the SQLite schema', () => {
  it('has the same tables, columns, NOT NULLs, keys and indexes', () => {
    const sqlite = sqliteShape();
    expect(Object.keys(sqlite).length).toBeGreaterThanOrEqual(17);
    expect(pgShape()).toEqual(sqlite);
  });

  it('types every time as timestamptz, every _raw as jsonb, every key as text', () => {
    const wrong: string[] = [];
    for (const table of Object.values(pgSchema)) {
      if (!is(table, PgTable)) continue;
      const config = pgTableConfig(table);
      for (const column of config.columns) {
        const type = column.getSQLType();
        const where = `${config.name}.${column.name} ${type}`;
        const isTime = /(^|_)(at|until)$/.test(column.name);
        if (isTime !== (type === 'timestamp with time zone')) wrong.push(where);
        if (column.name === '_raw' && type !== 'jsonb') wrong.push(where);
        if (column.primary && !['text', 'bigint'].includes(type)) wrong.push(where);
      }
      // Record keys (the interface's ids) are text, so 12 and "12" are one record.
      for (const column of config.columns.filter((c) => c.primary && /ID$|Id$/.test(c.name))) {
        if (column.getSQLType() !== 'text')
          wrong.push(`${config.name}.${column.name} key ${column.getSQLType()}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
