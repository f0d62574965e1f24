import { afterEach, describe, expect, it, vi } from 'vitest';
import { claimOperations, WALK_ROWS } from '../../src/operations/claim.js';
import { shapedPerLimit } from '../../src/operations/shaped.js';
import { driveSqlite } from '../../src/sqlite/commitQueue.js';
import { sqliteDialect } from '../../src/sqlite/scripts.js';
import { limitRows, sql } from '../../src/store/sql.js';
import { testContext } from '../helpers/context.js';
import { enqueueOperation, tokenization } from '../outbox/fixtures.js';

/**
 * A LIMIT is written into a statement's text, never bound: SQLite plans a statement with the value
 * its LIMIT is bound to, so each run of one with a bound LIMIT prepared it again (the claim's walk
 * 11-15 us a run against 2-4 us with the count written).
 */

let ctx: ReturnType<typeof testContext> | undefined;
afterEach(() => {
  ctx?.dispose();
  ctx = undefined;
  vi.restoreAllMocks();
});

describe('limitRows', () => {
  it('writes the count into the text and binds nothing', () => {
    expect(sql`SELECT id FROM outbox ORDER BY id ${limitRows(4)}`.render(sqliteDialect)).toEqual({
      text: 'SELECT id FROM outbox ORDER BY id LIMIT 4',
      values: [],
    });
    expect(limitRows(0).render(sqliteDialect).text).toBe('LIMIT 0');
  });

  it('refuses anything but a non-negative safe integer, so no text but a count is written', () => {
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53])
      expect(() => limitRows(bad), String(bad)).toThrow(/not a row count/);
  });
});

describe('shapedPerLimit', () => {
  it('makes the statement of a count once, and another for another count', () => {
    const make = vi.fn((limit: number) => ({ limit }));
    const perLimit = shapedPerLimit(make);
    expect(perLimit(4)).toBe(perLimit(4));
    expect(perLimit(8)).toEqual({ limit: 8 });
    expect(make.mock.calls.map(([limit]) => limit)).toEqual([4, 8]);
  });
});

describe("the SQLite claim's statements", () => {
  it('carry their LIMIT in the text, and a second claim of the same size prepares nothing new', () => {
    ctx = testContext();
    for (let i = 0; i < 2 * WALK_ROWS; i++)
      expect(enqueueOperation(ctx, tokenization(`limit-${i}`, { unitId: 9_000 + (i % 3) })).status).toBe(201);
    const { sqlite } = ctx.database;
    const prepare = vi.spyOn(sqlite, 'prepare');
    const claim = (limit: number) =>
      driveSqlite(
        sqlite,
        claimOperations(
          {
            owner: 'me',
            now: new Date(Date.now() + 1000).toISOString(),
            leaseUntil: '2999-01-01T00:00:00.000Z',
            limit,
          },
          undefined,
          false,
        ),
      );
    // Three units: the walk finds one row per unit, comes up short and asks each unit (the heads).
    expect(claim(4)).toHaveLength(3);
    const texts = prepare.mock.calls.map(([text]) => String(text));
    expect(texts.some((t) => /ORDER BY o\.id LIMIT 4\b/.test(t))).toBe(true);
    expect(texts.filter((t) => /LIMIT\s*\?/.test(t))).toEqual([]);
    prepare.mockClear();
    // The three rows claimed are sending now; their units' next rows wait for them.
    expect(claim(4)).toHaveLength(0);
    expect(prepare).not.toHaveBeenCalled();
  });
});
