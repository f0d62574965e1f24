import { describe, expect, it } from 'vitest';
import { all, appendFeed, first, run, type Script, type ScriptStore } from '../../src/store/script.js';
import { greatest, join, least, raw, sql, typed, whenShared } from '../../src/store/sql.js';

/**
 * The script store's contract (src/store/): one rule, written once, reads and writes the same on
 * both stores. Each case gets an empty database with the project's schema.
 */

export interface ScriptHarness {
  store: ScriptStore;
  /** The change feed as `resource record kind`, in seq order. */
  feed(): Promise<string[]>;
  close(): Promise<void>;
}

const T0 = '2026-11-26T10:00:00.000Z';

/** A state key of `daemon_state` written, then read back in the same transaction. */
function* putThenRead(
  key: string,
  value: string,
): Script<{ key: string; value: string; updated_at: string }> {
  yield* run(
    sql`INSERT INTO daemon_state (key, value, updated_at) VALUES (${key}, ${value}, ${typed(T0, 'timestamptz')})`,
  );
  const row = yield* first<{ key: string; value: string; updated_at: string }>(
    sql`SELECT key, value, updated_at FROM daemon_state WHERE key = ${key}`,
  );
  if (!row) throw new Error('the row written is not read back');
  return row;
}

export function scriptStoreCases(name: string, open: () => Promise<ScriptHarness>): void {
  describe(`script store on ${name}`, () => {
    it('runs a script in one transaction and gives rows in the same forms on both stores', async () => {
      const h = await open();
      try {
        const row = await h.store.transaction(putThenRead('paused', 'yes'));
        // A time reads back as SQLite stores it: ISO text with milliseconds and `Z`.
        expect(row).toEqual({ key: 'paused', value: 'yes', updated_at: T0 });
        const ids = await h.store.read<{ id: number }>(
          sql`INSERT INTO webhook_rejections (at, status, reason) VALUES (${typed(T0, 'timestamptz')}, ${401}, ${'bad'}) RETURNING id`,
        );
        expect(typeof ids[0]?.id).toBe('number');
      } finally {
        await h.close();
      }
    });

    it('commits nothing of a script that throws, its feed rows included, and runs its finally', async () => {
      const h = await open();
      try {
        let cleaned = false;
        function* failing(): Script<void> {
          try {
            yield* putThenRead('k', 'v');
            yield* appendFeed([{ resource: 'operations', recordId: 'R1', kind: 'queued', at: T0 }]);
            // A statement the server refuses, after a write and feed rows.
            yield* run(
              sql`INSERT INTO daemon_state (key, value, updated_at) VALUES (${'k'}, ${'again'}, ${typed(T0, 'timestamptz')})`,
            );
          } finally {
            cleaned = true;
          }
        }
        await expect(h.store.transaction(failing())).rejects.toThrow();
        expect(cleaned).toBe(true);
        expect(await h.store.read(sql`SELECT key FROM daemon_state`)).toEqual([]);
        expect(await h.feed()).toEqual([]);
        await h.store.transaction(
          (function* () {
            yield* appendFeed([{ resource: 'operations', recordId: 'R2', kind: 'queued', at: T0 }]);
          })(),
        );
        expect(await h.feed()).toEqual(['operations R2 queued']);
      } finally {
        await h.close();
      }
    });

    it("counts changed rows and spells greatest, least, typed nulls and lists in the dialect's words", async () => {
      const h = await open();
      try {
        await h.store.transaction(putThenRead('a', '1'));
        await h.store.transaction(putThenRead('b', '2'));
        const changed = await h.store.transaction(
          run(
            sql`UPDATE daemon_state SET value = ${'x'} WHERE key IN (${join([sql`${'a'}`, sql`${'b'}`, sql`${'c'}`], ', ')})`,
          ),
        );
        expect(changed.rowCount).toBe(2);
        const [row] = await h.store.read<{ hi: number; lo: number; none: number }>(
          sql`SELECT ${greatest(sql`${typed(3, 'int4')}`, raw('7'))} AS hi, ${least(sql`${typed(3, 'int4')}`, raw('7'))} AS lo,
                     CASE WHEN ${typed(null, 'text')} IS NULL THEN 1 ELSE 0 END AS none`,
        );
        expect(row).toEqual({ hi: 7, lo: 3, none: 1 });
        const keys = await h.store.transaction(
          all<{ key: string }>(
            sql`SELECT key FROM daemon_state ORDER BY key ${whenShared(raw('FOR UPDATE SKIP LOCKED'))}`,
          ),
        );
        expect(keys.map((k) => k.key)).toEqual(['a', 'b']);
        // A statement only a shared store has (an advisory lock) is skipped where it renders empty.
        const locked = await h.store.transaction(
          run(whenShared(sql`SELECT pg_advisory_xact_lock(${typed(42, 'int8')})`)),
        );
        expect(locked.rowCount).toBe(h.store.dialect.capabilities.sharedByProcesses ? 1 : 0);
      } finally {
        await h.close();
      }
    });
  });
}
