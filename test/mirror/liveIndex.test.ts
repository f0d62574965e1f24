import { afterEach, describe, expect, it } from 'vitest';
import { listResources } from '../../src/mirror/resources.js';
import * as statements from '../../src/mirror/statements.js';
import { sqliteDialect } from '../../src/sqlite/scripts.js';
import type { Sql } from '../../src/store/sql.js';
import { testContext } from '../helpers/context.js';

/**
 * A full scan counts the live rows of the units log twice (its record cap at the start, the rows it
 * did not see at the end). Each count walks the live-rows index (keys only), not the table, whose
 * rows hold each record's JSON: at a million rows, 19 ms instead of 234 (docs/benchmarks.md).
 */
let ctx: ReturnType<typeof testContext> | undefined;
afterEach(() => {
  ctx?.dispose();
  ctx = undefined;
});

describe('the live-rows index of the units log', () => {
  it("backs the scan's counts and its tombstoning, and holds only rows not removed", () => {
    ctx = testContext();
    const db = ctx.database.sqlite;
    const def = listResources(ctx.config).units;
    const plan = (statement: Sql) => {
      const { text, values } = statement.render(sqliteDialect);
      return (db.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...values) as { detail: string }[])
        .map((r) => r.detail)
        .join('; ');
    };
    const insert = db.prepare(
      `INSERT INTO unit_operations ("unitsOperationID", _raw, _hash, _first_seen_at, _last_seen_at, _removed_at)
       VALUES (?, '{}', 'h', 'x', 'x', ?)`,
    );
    insert.run('1', null);
    insert.run('2', '2026-11-01T00:00:00.000Z');
    insert.run('3', null);
    const count = () =>
      (db.prepare(statements.liveCount(def).render(sqliteDialect).text).get() as { n: number }).n;
    expect(count()).toBe(2);
    // With the planner's statistics of a real mirror (ANALYZE), which see narrow rows: unhinted, SQLite
    // would scan the table.
    for (let i = 4; i < 2000; i++) insert.run(String(i), null);
    db.exec('ANALYZE');
    for (const statement of [
      statements.liveCount(def),
      statements.unseenCount(def),
      statements.tombstoneUnseen(def, '2026-11-27T00:00:00.000Z'),
    ])
      expect(plan(statement)).toMatch(/unit_operations USING (COVERING )?INDEX unit_operations_live_key_idx/);

    db.prepare(`UPDATE unit_operations SET _removed_at = NULL WHERE "unitsOperationID" = '2'`).run();
    db.prepare(`UPDATE unit_operations SET _removed_at = 'x' WHERE "unitsOperationID" = '3'`).run();
    expect(count()).toBe(1998);
    const indexed = db
      .prepare(
        `SELECT "unitsOperationID" AS k FROM unit_operations INDEXED BY unit_operations_live_key_idx WHERE _removed_at IS NULL AND "unitsOperationID" IN ('1', '2', '3') ORDER BY 1`,
      )
      .all();
    expect(indexed).toEqual([{ k: '1' }, { k: '2' }]);
  });
});
