import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { claimOperations, WALK_ROWS } from '../../src/operations/claim.js';
import type { OperationRow } from '../../src/operations/rows.js';
import { NEXT_DUE_AT } from '../../src/operations/transitions.js';
import type { Sqlite } from '../../src/sqlite/open.js';
import { runSqlite, sqliteDialect } from '../../src/sqlite/scripts.js';
import { isFeedStep, type Script } from '../../src/store/script.js';
import { testContext } from '../helpers/context.js';

/**
 * Per-key order on SQLite: a row is claimable when no older row of its key is queued or sending.
 * The claim asks it of the partial index of unsent rows (`outbox_unsettled_key_idx`), so the test
 * costs one probe however many operations the key has had; over the full `(order_key, id)` index it
 * replaced, each claim of a key's next row walked the key's whole settled history.
 */

const NOW = '2026-03-01T12:00:00.000Z';
const PAST = '2026-03-01T11:00:00.000Z';
const FUTURE = '2026-03-01T13:00:00.000Z';

let ctx: ReturnType<typeof testContext> | undefined;
afterEach(() => {
  ctx?.dispose();
  ctx = undefined;
});

/** `count` rows on key `key` in `state`, in id order; their ids. */
function seed(sqlite: Sqlite, key: string, state: string, count: number): number[] {
  const insert = sqlite.prepare(
    `INSERT INTO outbox ("marketplaceTransactionRef", "operationType", order_key, body, body_hash, state,
       attempts, next_attempt_at, lease_until, created_at, updated_at)
     VALUES (?, 'Transfer', ?, '{}', 'h', ?, 1, ?, ?, ?, ?) RETURNING id`,
  );
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    const ref = `${key}-${state}-${ids.length}-${Math.random().toString(36).slice(2)}`;
    ids.push((insert.get(ref, key, state, PAST, FUTURE, PAST, PAST) as { id: number }).id);
  }
  return ids;
}

/** `count` rows of no unit, queued; their ids. */
function seedNoUnit(sqlite: Sqlite, count: number): number[] {
  const ids = seed(sqlite, 'no-unit', 'queued', count);
  sqlite.prepare(`UPDATE outbox SET order_key = NULL WHERE order_key = 'no-unit'`).run();
  return ids;
}

/** The claim run on `sqlite`, with the query plan of each statement it ran. */
function claimWithPlans(sqlite: Sqlite, limit: number): { rows: OperationRow[]; plans: string[] } {
  const script: Script<OperationRow[]> = claimOperations(
    { owner: 'me', now: NOW, leaseUntil: FUTURE, limit },
    undefined,
    false,
  );
  const plans: string[] = [];
  let step = script.next();
  while (!step.done) {
    const current = step.value;
    if (isFeedStep(current)) {
      step = script.next({ rows: [], rowCount: 0 });
      continue;
    }
    const { text, values } = current.render(sqliteDialect);
    const plan = sqlite.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...values) as { detail: string }[];
    plans.push(plan.map((r) => r.detail).join('; '));
    step = script.next(runSqlite(sqlite, current));
  }
  return { rows: step.value, plans };
}

describe('the ordered claim on SQLite', () => {
  it("tests a key's order on the unsent rows' index, not the key's settled history", () => {
    ctx = testContext();
    const sqlite = ctx.database.sqlite;
    // Eight units with 300 settled operations each, then their next two queued; a ninth unit whose
    // oldest row is out (sending) and a tenth whose older row a person retried after newer ones
    // were accepted: both wait.
    const next: number[] = [];
    for (let k = 0; k < 8; k++) {
      seed(sqlite, `unit:${k}`, 'accepted', 300);
      next.push(seed(sqlite, `unit:${k}`, 'queued', 2)[0]!);
    }
    seed(sqlite, 'unit:out', 'sending', 1);
    seed(sqlite, 'unit:out', 'queued', 1);
    const retried = seed(sqlite, 'unit:retried', 'queued', 1)[0]!;
    seed(sqlite, 'unit:retried', 'accepted', 2);
    seed(sqlite, 'unit:retried', 'queued', 1);
    sqlite.prepare('UPDATE outbox SET next_attempt_at = ? WHERE id = ?').run(FUTURE, retried);
    // With statistics of a real outbox, as a planner that has run ANALYZE sees it.
    sqlite.exec('ANALYZE');

    const { rows, plans } = claimWithPlans(sqlite, 20);
    // Exactly each ready unit's oldest queued row: none behind a row out, none behind the retried one.
    expect(rows.map((r) => r.id).sort((a, b) => a - b)).toEqual(next);
    // One walk per from-state (queued, sending), each testing its rows' units on the partial index,
    // reading the state's rows in index order (a co-routine, no sort of the walked rows).
    const walks = plans.filter((p) => p.includes('SEARCH p '));
    expect(walks).toHaveLength(2);
    for (const plan of walks) {
      expect(plan).toMatch(
        /SEARCH p USING (COVERING )?INDEX outbox_unsettled_key_idx \(order_key=\? AND id<\?\)/,
      );
      expect(plan).toMatch(/CO-ROUTINE o; SEARCH outbox USING INDEX outbox_state_id_idx \(state=\?\)/);
      expect(plan).not.toMatch(/TEMP B-TREE/);
    }
  });

  it("finds a unit's next row past the walk by asking each unit, with one probe per unit", () => {
    ctx = testContext();
    const sqlite = ctx.database.sqlite;
    // Unit A has a row out and WALK_ROWS + 44 queued behind it; unit B's next row and a row of no
    // unit come after them all: the claim's walk of the first WALK_ROWS queued rows finds nothing.
    seed(sqlite, 'unit:a', 'sending', 1);
    seed(sqlite, 'unit:a', 'queued', WALK_ROWS + 44);
    const [b] = seed(sqlite, 'unit:b', 'queued', 2);
    const none = seedNoUnit(sqlite, 2);
    sqlite.exec('ANALYZE');
    const { rows, plans } = claimWithPlans(sqlite, 8);
    expect(rows.map((r) => r.id)).toEqual([b, ...none]);
    const heads = plans.filter((p) => p.includes('RECURSIVE STEP'));
    expect(heads).toHaveLength(1);
    // Units and their oldest rows are index probes; nothing scans the table or walks the queue.
    expect(heads[0]).toMatch(/outbox_unsettled_key_idx \(order_key>\?\)/);
    expect(heads[0]).not.toMatch(/SCAN (outbox|o)\b|outbox_state_id_idx/);
  });

  it('claims exactly the oldest claimable rows, whatever the mix of units, states and times', () => {
    ctx = testContext();
    const sqlite = ctx.database.sqlite;
    const insert = sqlite.prepare(
      `INSERT INTO outbox ("marketplaceTransactionRef", "operationType", order_key, body, body_hash, state,
         attempts, next_attempt_at, lease_owner, lease_until, created_at, updated_at)
       VALUES (?, 'Transfer', ?, '{}', 'h', ?, 1, ?, 'other', ?, ?, ?) RETURNING id`,
    );
    // A few units (most rows blocked, so the walk comes up short and every unit is asked) or many
    // (the walk finds enough); rows of no unit rare or common.
    const rowOf = (units: number, noUnitOneIn: number) =>
      fc.record({
        unit: fc.option(fc.integer({ min: 0, max: units - 1 }), { nil: null, freq: noUnitOneIn }),
        state: fc.constantFrom(
          'queued',
          'queued',
          'queued',
          'queued',
          'queued',
          'sending',
          'accepted',
          'failed',
        ),
        due: fc.boolean(),
        leaseExpired: fc.boolean(),
      });
    const outboxes = fc
      .tuple(fc.constantFrom(2, 3, 7, 400), fc.constantFrom(6, 200))
      .chain(([units, noUnitOneIn]) =>
        fc.array(rowOf(units, noUnitOneIn), { maxLength: 2 * WALK_ROWS + 100, size: 'max' }),
      );
    fc.assert(
      fc.property(outboxes, fc.integer({ min: 1, max: 12 }), (spec, limit) => {
        sqlite.exec('DELETE FROM outbox');
        const rows = spec.map((r, i) => ({
          ...r,
          id: (
            insert.get(
              `prop-${i}`,
              r.unit === null ? null : `unit:${r.unit}`,
              r.state,
              r.due ? PAST : FUTURE,
              r.leaseExpired ? PAST : FUTURE,
              PAST,
              PAST,
            ) as { id: number }
          ).id,
        }));
        const unsent = (r: (typeof rows)[number]) => r.state === 'queued' || r.state === 'sending';
        const claimable = rows.filter(
          (r) =>
            ((r.state === 'queued' && r.due) || (r.state === 'sending' && r.leaseExpired)) &&
            (r.unit === null || !rows.some((o) => o.unit === r.unit && o.id < r.id && unsent(o))),
        );
        const expected = claimable.map((r) => r.id).slice(0, limit);
        expect(claimWithPlans(sqlite, limit).rows.map((r) => r.id)).toEqual(expected);
      }),
      // No shrinking: each run writes hundreds of rows, and shrinking one took minutes.
      { numRuns: 60, endOnFailure: true },
    );
  });

  it('holds only unsent rows in the per-key index, so settling a row takes it out', () => {
    ctx = testContext();
    const sqlite = ctx.database.sqlite;
    const [first, second] = seed(sqlite, 'unit:1', 'queued', 2) as [number, number];
    const indexed = () =>
      (
        sqlite
          .prepare(
            `SELECT id FROM outbox INDEXED BY outbox_unsettled_key_idx
             WHERE order_key = 'unit:1' AND state IN ('queued', 'sending') ORDER BY id`,
          )
          .all() as { id: number }[]
      ).map((r) => r.id);
    expect(indexed()).toEqual([first, second]);
    expect(claimWithPlans(sqlite, 5).rows.map((r) => r.id)).toEqual([first]);
    sqlite.prepare(`UPDATE outbox SET state = 'accepted' WHERE id = ?`).run(first);
    expect(indexed()).toEqual([second]);
    expect(claimWithPlans(sqlite, 5).rows.map((r) => r.id)).toEqual([second]);
  });

  it("finds when the next queued row falls due in the queued rows' own index, one entry read", () => {
    ctx = testContext();
    const sqlite = ctx.database.sqlite;
    seed(sqlite, 'unit:settled', 'accepted', 50);
    seed(sqlite, 'unit:out', 'sending', 3);
    seed(sqlite, 'unit:waiting', 'queued', 50);
    const later = seed(sqlite, 'unit:later', 'queued', 1)[0]!;
    const soonest = seed(sqlite, 'unit:soon', 'queued', 1)[0]!;
    sqlite.prepare('UPDATE outbox SET next_attempt_at = ? WHERE id = ?').run(FUTURE, later);
    sqlite
      .prepare('UPDATE outbox SET next_attempt_at = ? WHERE id = ?')
      .run('2026-03-01T10:00:00.000Z', soonest);
    const { text, values } = NEXT_DUE_AT.render(sqliteDialect);
    const plan = (sqlite.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...values) as { detail: string }[])
      .map((r) => r.detail)
      .join('; ');
    // Unguided, SQLite read the queued rows' (state, id) range in full for their minimum.
    expect(plan).toBe('SEARCH outbox USING COVERING INDEX outbox_queued_due_idx');
    expect(runSqlite(sqlite, NEXT_DUE_AT).rows).toEqual([{ at: '2026-03-01T10:00:00.000Z' }]);
    // Leaving the queue leaves the index: the sending and settled rows' times are not in it.
    sqlite.prepare(`UPDATE outbox SET state = 'sending' WHERE id = ?`).run(soonest);
    expect(runSqlite(sqlite, NEXT_DUE_AT).rows).toEqual([{ at: PAST }]);
  });
});
