import { describe, expect, it } from 'vitest';
import { shaped } from '../../src/operations/shaped.js';
import { postgresDialect } from '../../src/postgres/scripts.js';
import { sqliteDialect } from '../../src/sqlite/scripts.js';
import { greatest, raw, sql, typed, whenShared } from '../../src/store/sql.js';

/** A statement rendered once from its builder binds each call's values where the builder put them. */

const build = (v: Readonly<Record<'id' | 'now' | 'owner' | 'refund', unknown>>) =>
  sql`UPDATE outbox SET updated_at = ${typed(v.now, 'timestamptz')}, attempts = ${greatest(raw('0'), sql`attempts - ${v.refund}`)}
    WHERE id = ${v.id} AND (lease_owner = ${v.owner} OR next_attempt_at <= ${typed(v.now, 'timestamptz')})${whenShared(raw(' FOR UPDATE'))}`;

describe('shaped', () => {
  const statement = shaped(build);

  it('renders what the builder renders with the same values, on each dialect, call after call', () => {
    for (const dialect of [sqliteDialect, postgresDialect])
      for (const values of [
        { id: 7, now: '2026-03-01T12:00:00.000Z', owner: 'a', refund: true },
        { id: 9, now: '2026-03-02T12:00:00.000Z', owner: null, refund: false },
      ])
        expect(statement(values).render(dialect)).toEqual(build(values).render(dialect));
  });

  it('refuses to be a fragment of another statement, whose values it would lose', () => {
    const inner = statement({ id: 1, now: 'x', owner: 'o', refund: 0 });
    expect(() => sql`WITH x AS (${inner}) SELECT 1`.render(sqliteDialect)).toThrow(/fragment/);
  });
});
